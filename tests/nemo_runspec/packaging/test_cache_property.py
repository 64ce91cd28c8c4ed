"""Property: a cached (warm) package is never stale.

After any sequence of edits (content, same size and same mtime, new, removed and
renamed files, new directories, mode changes, ``.gitignore`` and
``.git/info/exclude`` rules, staging, commits) each packager's cached call gives
the archive an uncached build of the same tree gives, byte for byte. The
changes come fast, within the file system's timestamp granularity, as an editor
or a script makes them, which is where stat-based checks go wrong.

The git and code packagers run ``git status`` on a private index copy with git's
untracked cache on (:func:`nemo_runspec.packaging.git.private_index`); these
examples also check that the user's own index is never written by it.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from nemo_runspec.errors import PackagingError
from nemo_runspec.packaging.code import package_code
from nemo_runspec.packaging.git import package_git, private_index
from nemo_runspec.packaging.pattern import package_pattern
from tests.nemo_runspec.packaging.git_repos import git, make_repo

SETTINGS = settings(max_examples=12, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

DIRS = ["", "a/", "a/b/"]
NAMES = ["x.py", "y.txt", "z.log"]
PATHS = [d + n for d in DIRS for n in NAMES]
START = {"a/x.py": "ax = 1\n", "a/b/y.txt": "aby\n", "x.py": "x = 1\n", ".gitignore": "*.log\n"}

OPS = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(PATHS), st.text("abc\n", max_size=6)),
    st.tuples(st.just("same_size_same_mtime"), st.sampled_from(PATHS)),
    st.tuples(st.just("remove"), st.sampled_from(PATHS)),
    st.tuples(st.just("rename"), st.sampled_from(PATHS), st.sampled_from(PATHS)),
    st.tuples(st.just("chmod"), st.sampled_from(PATHS)),
    st.tuples(st.just("ignore"), st.sampled_from(["", "a/", "c/"]),
              st.sampled_from(["*.tmp", "*.log", "y.txt", "b/", "!z.log"])),
    st.tuples(st.just("unignore"), st.sampled_from(["", "a/", "c/"])),
    st.tuples(st.just("exclude"), st.sampled_from(["*.py", "w.tmp", "c/"])),
    st.tuples(st.just("stage"),),
    st.tuples(st.just("commit"),),
)


def apply(repo: Path, op: tuple) -> None:
    """Make one change to the work tree (a no-op when it does not apply)."""
    kind = op[0]
    if kind == "write":
        p = repo / op[1]
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(op[2] + op[1] + "\n")
    elif kind == "same_size_same_mtime":
        p = repo / op[1]
        if p.is_file() and p.stat().st_size:
            data = p.read_bytes()
            st_ = p.stat()
            p.write_bytes(bytes([97 + (data[0] - 96) % 26]) + data[1:])  # a..z, never back to the start
            os.utime(p, ns=(st_.st_atime_ns, st_.st_mtime_ns))  # only ctime and content differ
            while p.stat().st_ctime_ns == st_.st_ctime_ns:  # a kernel with coarse timestamps: the
                time.sleep(0.002)  # same tick would make the edit invisible to any stat-based check
                os.utime(p, ns=(st_.st_atime_ns, st_.st_mtime_ns))
    elif kind == "remove":
        (repo / op[1]).unlink(missing_ok=True)
    elif kind == "rename":
        src, dst = repo / op[1], repo / op[2]
        if src.is_file() and src != dst:
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dst)
    elif kind == "chmod":
        p = repo / op[1]
        if p.is_file():
            p.chmod(p.stat().st_mode ^ 0o100)
    elif kind == "ignore":
        p = repo / op[1] / ".gitignore"
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "a") as f:
            f.write(op[2] + "\n")
    elif kind == "unignore":
        (repo / op[1] / ".gitignore").unlink(missing_ok=True)
    elif kind == "exclude":
        with open(repo / ".git" / "info" / "exclude", "a") as f:
            f.write(op[1] + "\n")
    elif kind == "stage":
        git(repo, "add", "-A")
    elif kind == "commit":
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "step", "--allow-empty")


def index_identity(repo: Path) -> tuple[int, int]:
    st_ = (repo / ".git" / "index").stat()
    return st_.st_ino, st_.st_mtime_ns


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))


@SETTINGS
@given(st.lists(OPS, min_size=1, max_size=6))
@example([("same_size_same_mtime", "x.py"), ("same_size_same_mtime", "x.py")])  # dirty, then only ctime
@example([("write", "c/n.py", "a"), ("exclude", "c/"), ("rename", "c/n.py", "a/b/n.py")])
@example([("write", "a/w.tmp", "a"), ("ignore", "a/", "*.tmp"), ("unignore", "a/")])
def test_code_packager_cache_is_never_stale(ops):
    with tempfile.TemporaryDirectory(prefix="pkprop-") as tmp:
        tmp = Path(tmp)
        repo = make_repo(tmp / "r", START)
        cache = tmp / "cache"
        package_code(repo, tmp / "first.tar.gz", cache_dir=cache)
        for i, op in enumerate(ops):
            apply(repo, op)
            before = index_identity(repo)
            warm = package_code(repo, tmp / f"w{i}.tar.gz", cache_dir=cache)
            assert index_identity(repo) == before, "the user's index was written"
            fresh = package_code(repo, tmp / f"f{i}.tar.gz", use_cache=False)
            assert (tmp / f"w{i}.tar.gz").read_bytes() == (tmp / f"f{i}.tar.gz").read_bytes(), (op, warm.cached)
            assert warm.untracked == fresh.untracked and warm.dirty == fresh.dirty
            again = package_code(repo, tmp / f"a{i}.tar.gz", cache_dir=cache)  # nothing changed since
            assert again.cached and again.archive_sha256 == fresh.archive_sha256


@SETTINGS
@given(st.lists(OPS, min_size=1, max_size=6))
def test_git_packager_cache_is_never_stale(ops):
    with tempfile.TemporaryDirectory(prefix="pkprop-") as tmp:
        tmp = Path(tmp)
        repo = make_repo(tmp / "r", START)
        cache = tmp / "cache"
        package_git(repo, tmp / "first.tar.gz", cache_dir=cache)
        for i, op in enumerate(ops):
            apply(repo, op)
            fresh_err = warm_err = None
            try:
                fresh = package_git(repo, tmp / f"f{i}.tar.gz", use_cache=False)
            except PackagingError as e:
                fresh_err = str(e)
            try:
                warm = package_git(repo, tmp / f"w{i}.tar.gz", cache_dir=cache)
            except PackagingError as e:
                warm_err = str(e)
            assert warm_err == fresh_err, op  # uncommitted tracked changes are refused either way
            if fresh_err is None:
                assert (tmp / f"w{i}.tar.gz").read_bytes() == (tmp / f"f{i}.tar.gz").read_bytes(), op
                assert warm.untracked == fresh.untracked
            lenient = package_git(repo, tmp / f"l{i}.tar.gz", cache_dir=cache, check_uncommitted=False)
            lenient_fresh = package_git(repo, tmp / f"lf{i}.tar.gz", use_cache=False, check_uncommitted=False)
            assert lenient.archive_sha256 == lenient_fresh.archive_sha256
            assert (lenient.untracked, lenient.dirty) == (lenient_fresh.untracked, lenient_fresh.dirty)


@SETTINGS
@given(st.lists(OPS.filter(lambda op: op[0] in ("write", "same_size_same_mtime", "remove", "rename", "chmod")),
                min_size=1, max_size=6))
@example([("same_size_same_mtime", "x.py")])
@example([("rename", "a/x.py", "a/b/x.py"), ("remove", "x.py")])
def test_pattern_packager_cache_is_never_stale(ops):
    with tempfile.TemporaryDirectory(prefix="pkprop-") as tmp:
        tmp = Path(tmp)
        base = tmp / "base"
        for rel, text in START.items():
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            (base / rel).write_text(text)
        cache = tmp / "cache"
        package_pattern(["**/*"], base, tmp / "first.tar.gz", cache_dir=cache)
        for i, op in enumerate(ops):
            apply(base, op)
            package_pattern(["**/*"], base, tmp / f"w{i}.tar.gz", cache_dir=cache)
            package_pattern(["**/*"], base, tmp / f"f{i}.tar.gz", use_cache=False)
            assert (tmp / f"w{i}.tar.gz").read_bytes() == (tmp / f"f{i}.tar.gz").read_bytes(), op


def test_private_index_follows_every_write_of_the_real_index(tmp_path):
    """Staging changes the real index; the copy status works on follows it (a new copy),
    keeps the original's mtime (git's racy-timestamp rule decides as on the original),
    and old copies go once the new index has been in place for a while."""
    repo = make_repo(tmp_path / "r", START)
    d = tmp_path / "idx"
    first = private_index(repo, d)
    assert first is not None and first.read_bytes() == (repo / ".git" / "index").read_bytes()
    assert first.stat().st_mtime_ns == (repo / ".git" / "index").stat().st_mtime_ns
    assert private_index(repo, d) == first  # unchanged index: the same copy
    (repo / "new.py").write_text("n = 1\n")
    git(repo, "add", "new.py")
    second = private_index(repo, d)
    assert second is not None and second != first and first.exists()  # the old one may still be in use
    real = repo / ".git" / "index"
    os.utime(real, ns=(real.stat().st_atime_ns, real.stat().st_mtime_ns - 120 * 10**9))  # in place for 2 min
    third = private_index(repo, d)
    assert third is not None and not first.exists() and not second.exists()
    assert "new.py" in git(repo, "ls-files")


def test_a_copy_that_lost_its_entries_is_made_again(tmp_path):
    """Git reads a missing index as an empty one and may write that back: such a copy
    (every tracked file would look deleted) is never trusted."""
    repo = make_repo(tmp_path / "r", START)
    d = tmp_path / "idx"
    copy = private_index(repo, d)
    env = {**os.environ, "GIT_INDEX_FILE": str(copy)}
    subprocess.run(["git", "rm", "-q", "--cached", "-r", "."], cwd=repo, env=env, check=True)  # the copy: empty
    assert private_index(repo, d) == copy and copy.read_bytes() == (repo / ".git" / "index").read_bytes()
    plan = package_code(repo, tmp_path / "c.tar.gz", cache_dir=d.parent / "cache")
    assert plan.dirty is False and plan.untracked == []


def test_no_private_index_with_git_location_variables_or_a_split_index(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "r", START)
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo / ".git" / "index"))
    assert private_index(repo, tmp_path / "idx") is None
    monkeypatch.delenv("GIT_INDEX_FILE")
    git(repo, "update-index", "--split-index")
    assert private_index(repo, tmp_path / "idx") is None
    assert package_code(repo, tmp_path / "c.tar.gz").file_count == len(START)


def test_a_relative_cache_dir_is_not_resolved_against_the_repo(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "r", START)
    monkeypatch.chdir(tmp_path)
    package_code(repo, tmp_path / "a.tar.gz", cache_dir="rel-cache")
    warm = package_code(repo, tmp_path / "b.tar.gz", cache_dir="rel-cache")
    assert warm.cached and list((tmp_path / "rel-cache" / "git-index").glob("*.index"))
    assert warm.dirty is False and warm.untracked == []  # git found the copy (an empty index: all untracked)
    assert not (repo / "rel-cache").exists() and "rel-cache" not in git(repo, "status", "--porcelain")


def test_worktree_and_submodule_indexes_are_found(tmp_path):
    repo = make_repo(tmp_path / "r", START)
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    wt = private_index(tmp_path / "wt", tmp_path / "idx")
    assert wt is not None and wt.read_bytes() == (repo / ".git" / "worktrees" / "wt" / "index").read_bytes()
    (tmp_path / "wt" / "a" / "x.py").write_text("changed\n")
    plan = package_code(tmp_path / "wt", tmp_path / "wt.tar.gz")
    assert plan.dirty and not plan.cached
