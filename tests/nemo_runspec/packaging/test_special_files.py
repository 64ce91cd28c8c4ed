"""A FIFO, socket or device where packaging expects a file is refused at once with a
one-line error naming it, for every packager that reads the working tree (reading a
FIFO would block forever). Real repositories and real special files in tmp dirs."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from nemo_runspec.errors import PackagingError
from nemo_runspec.packaging.code import package_code
from nemo_runspec.packaging.git import package_git
from nemo_runspec.packaging.pattern import package_pattern
from tests.nemo_runspec.packaging.git_repos import git, make_repo

pytestmark = pytest.mark.timeout(60)  # a hang is the bug: fail instead of blocking the suite


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))


def make_special(path: Path, kind: str) -> None:
    if path.exists():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_code_packager_refuses_a_tracked_file_turned_special(tmp_path, kind):
    repo = make_repo(tmp_path / "r")
    make_special(repo / "README.md", kind)  # tracked as a regular file, now special
    with pytest.raises(PackagingError) as err:
        package_code(repo, tmp_path / "out.tar.gz")
    assert f"{repo / 'README.md'} ({'FIFO' if kind == 'fifo' else 'socket'})" in str(err.value)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "out.tar.gz").exists()


def test_code_packager_names_every_special_file(tmp_path):
    repo = make_repo(tmp_path / "r")
    for name in ("README.md", "src/proj/util.py"):  # tracked (git lists no untracked FIFOs)
        make_special(repo / name, "fifo")
    with pytest.raises(PackagingError) as err:
        package_code(repo, tmp_path / "out.tar.gz")
    assert "README.md (FIFO)" in str(err.value) and "util.py (FIFO)" in str(err.value)


def test_pattern_packager_refuses_a_matched_fifo(tmp_path):
    base = tmp_path / "b"
    base.mkdir()
    (base / "ok.py").write_text("x = 1\n")
    make_special(base / "pipe.py", "fifo")
    with pytest.raises(PackagingError, match=r"pipe\.py \(FIFO\)"):
        package_pattern(["*.py"], base, tmp_path / "out.tar.gz")


def test_git_packager_refuses_an_extra_file_that_is_a_fifo(tmp_path):
    repo = make_repo(tmp_path / "r")
    git(repo, "rm", "-q", "--cached", "README.md")
    git(repo, "commit", "-qm", "untrack")
    make_special(repo / "README.md", "fifo")
    with pytest.raises(PackagingError, match=r"README\.md \(FIFO\)"):
        package_git(repo, tmp_path / "out.tar.gz", include_pattern=["README.md"])


def test_git_packager_without_the_uncommitted_check_names_a_tracked_fifo(tmp_path):
    """check_uncommitted = false ships the committed tree and diffs the rest: git's own
    "cannot hash README.md" becomes the packagers' one line saying what the file is."""
    repo = make_repo(tmp_path / "r")
    make_special(repo / "README.md", "fifo")  # tracked as a regular file, now a FIFO
    with pytest.raises(PackagingError) as err:
        package_git(repo, tmp_path / "out.tar.gz", check_uncommitted=False)
    assert f"{repo / 'README.md'} (FIFO)" in str(err.value) and "regular files" in str(err.value)
    assert "\n" not in str(err.value)
