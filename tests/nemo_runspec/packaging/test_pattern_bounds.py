"""The pattern packager's documented bounds (docs/packaging.md, "pattern" and "code"):
matches outside the base directory are an error; symlinks are kept as symlinks."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest

from nemo_runspec.errors import PackagingError
from nemo_runspec.packaging.pattern import match_patterns, package_pattern


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    base = tmp_path / "proj"
    (base / "src").mkdir(parents=True)
    (base / "src" / "a.py").write_text("a = 1\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "secret.py").write_text("x = 1\n")
    return base


@pytest.mark.parametrize("pattern", ["../other/*.py", "src/../../other/secret.py", "{abs}/other/*.py"])
def test_a_match_outside_the_base_is_an_error(tree: Path, pattern: str) -> None:
    pattern = pattern.format(abs=tree.parent)
    with pytest.raises(PackagingError, match=r"matches .*secret\.py, which is outside") as info:
        match_patterns([pattern], tree)
    assert info.value.key == "packager_include_pattern"


def test_an_absolute_pattern_inside_the_base_is_fine(tree: Path) -> None:
    assert [name for name, _ in match_patterns([f"{tree}/src/*.py"], tree)] == ["src/a.py"]


def test_a_pattern_matching_nothing_is_an_error(tree: Path) -> None:
    with pytest.raises(PackagingError, match="matches no file"):
        match_patterns(["src/*.txt"], tree)


def test_symlinks_are_archived_as_symlinks(tree: Path, tmp_path: Path) -> None:
    """A link to a file outside the base is packaged as the link, never the file it names."""
    os.symlink(tmp_path / "other" / "secret.py", tree / "src" / "link.py")
    os.symlink("a.py", tree / "src" / "rel.py")
    out = tmp_path / "out.tar.gz"
    package_pattern(["src/*.py"], tree, out, use_cache=False)
    with tarfile.open(out) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert members["src/link.py"].issym()
        assert members["src/link.py"].linkname == str(tmp_path / "other" / "secret.py")
        assert members["src/rel.py"].issym() and members["src/rel.py"].linkname == "a.py"
        assert members["src/a.py"].isfile()
        assert tar.extractfile("src/a.py").read() == b"a = 1\n"


def test_code_packager_keeps_symlinks_as_symlinks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nemo_runspec.packaging.code import package_code
    from tests.nemo_runspec.packaging.git_repos import make_repo

    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    outside = tmp_path / "outside.txt"
    outside.write_text("not packaged\n")
    repo = make_repo(tmp_path / "r")
    os.symlink(outside, repo / "data_link")         # untracked link to a file outside the repo
    os.symlink("src/proj/util.py", repo / "util_link.py")
    plan = package_code(repo, tmp_path / "job" / "code.tar.gz")
    with tarfile.open(plan.archive_path) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert members["data_link"].issym() and members["data_link"].linkname == str(outside)
    assert members["util_link.py"].issym() and members["util_link.py"].linkname == "src/proj/util.py"
