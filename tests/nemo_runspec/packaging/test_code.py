"""The code packager: working tree content, ignore rules, determinism, cache reuse and invalidation."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from nemo_runspec.packaging.code import package_code
from nemo_runspec.packaging.manifest import PackagingPlan
from tests.nemo_runspec.packaging.git_repos import git, make_repo, tar_contents


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))


def test_working_tree_as_git_sees_it(tmp_path):
    repo = make_repo(tmp_path / "r")
    (repo / "src/proj/util.py").write_text("def f():\n    return 3\n")  # uncommitted edit
    (repo / "README.md").unlink()  # deleted but tracked
    (repo / "new_module.py").write_text("NEW = 1\n")  # untracked
    (repo / "train.log").write_text("ignored\n")  # ignored by *.log
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_bytes(b"\0" * 10)  # ignored dir
    plan = package_code(repo, tmp_path / "job" / "code.tar.gz")
    files = tar_contents(plan.archive_path)
    assert set(files) == {".gitignore", "new_module.py", "src/proj/__init__.py", "src/proj/util.py", "src/proj/recipes/train.py"}
    assert files["src/proj/util.py"] == b"def f():\n    return 3\n"
    assert plan.dirty is True
    assert plan.untracked == ["new_module.py"]
    assert plan.commit == git(repo, "rev-parse", "HEAD").strip()
    assert {d["path"] for d in plan.diff_summary} == {"src/proj/util.py", "README.md"}
    diff = Path(plan.diff_path).read_bytes()
    assert b"+    return 3" in diff and plan.diff_sha256 == hashlib.sha256(diff).hexdigest()
    assert Path(plan.diff_path).parent == tmp_path / "job"


def test_manifest_lists_every_file_with_sha256(tmp_path):
    repo = make_repo(tmp_path / "r")
    (repo / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(repo / "run.sh", 0o755)
    plan = package_code(repo, tmp_path / "code.tar.gz")
    by_path = {f.path: f for f in plan.files}
    for rel, content in tar_contents(plan.archive_path).items():
        assert by_path[rel].sha256 == hashlib.sha256(content).hexdigest()
        assert by_path[rel].size == len(content)
        assert by_path[rel].sha256 == hashlib.sha256((repo / rel).read_bytes()).hexdigest()
    assert by_path["run.sh"].mode == 0o755 and by_path["README.md"].mode == 0o644
    assert plan.file_count == len(plan.files) == 6
    # JSON round trip
    again = PackagingPlan.from_dict(json.loads(plan.to_json()))
    assert again.to_dict() == plan.to_dict()


def test_identical_trees_give_identical_archives(tmp_path):
    files = {"a.py": "A\n", "pkg/b.py": "B\n", "pkg/c.txt": "C" * 5000}
    r1 = make_repo(tmp_path / "r1", files)
    time.sleep(0.02)
    r2 = make_repo(tmp_path / "r2", files)
    os.utime(r2 / "a.py", (1, 1))  # different mtimes must not matter
    os.chmod(r2 / "pkg/c.txt", 0o600)  # nor group/other permission bits
    p1 = package_code(r1, tmp_path / "1.tar.gz", use_cache=False)
    time.sleep(1.1)  # a wall-clock timestamp leaking into the archive would now differ
    p2 = package_code(r2, tmp_path / "2.tar.gz", use_cache=False)
    assert p1.archive_sha256 == p2.archive_sha256
    assert (tmp_path / "1.tar.gz").read_bytes() == (tmp_path / "2.tar.gz").read_bytes()


def test_cache_reuse_and_invalidation(tmp_path):
    repo = make_repo(tmp_path / "r")
    cold = package_code(repo, tmp_path / "j1" / "code.tar.gz")
    assert cold.cached is False
    cache_files = list((tmp_path / "home" / "cache" / "packages").glob("*.tar.gz"))
    assert [p.name for p in cache_files] == [f"{cold.fingerprint}.tar.gz"]

    warm = package_code(repo, tmp_path / "j2" / "code.tar.gz")
    assert warm.cached is True
    assert warm.archive_sha256 == cold.archive_sha256
    assert (tmp_path / "j2" / "code.tar.gz").read_bytes() == (tmp_path / "j1" / "code.tar.gz").read_bytes()

    # one byte changed in a tracked file -> new archive with the change
    (repo / "src/proj/__init__.py").write_text("VALUE = 2\n")
    changed = package_code(repo, tmp_path / "j3" / "code.tar.gz")
    assert changed.cached is False and changed.fingerprint != cold.fingerprint
    assert tar_contents(changed.archive_path)["src/proj/__init__.py"] == b"VALUE = 2\n"

    # same size, same content length: still detected
    (repo / "src/proj/__init__.py").write_text("VALUE = 3\n")
    again = package_code(repo, tmp_path / "j4" / "code.tar.gz")
    assert tar_contents(again.archive_path)["src/proj/__init__.py"] == b"VALUE = 3\n"

    # an untracked file -> included
    (repo / "extra.py").write_text("E = 1\n")
    with_untracked = package_code(repo, tmp_path / "j5" / "code.tar.gz")
    assert with_untracked.cached is False
    assert "extra.py" in tar_contents(with_untracked.archive_path)

    # an ignored file -> excluded, and the cache is still valid
    (repo / "debug.log").write_text("noise\n")
    with_ignored = package_code(repo, tmp_path / "j6" / "code.tar.gz")
    assert with_ignored.cached is True
    assert "debug.log" not in tar_contents(with_ignored.archive_path)

    # committing the same content: HEAD moved, archive content identical
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "more")
    committed = package_code(repo, tmp_path / "j7" / "code.tar.gz")
    assert committed.cached is False
    assert committed.archive_sha256 == with_ignored.archive_sha256
    assert committed.dirty is False and committed.diff_path is None


def test_staged_change_then_reverted_in_worktree(tmp_path):
    repo = make_repo(tmp_path / "r")
    (repo / "README.md").write_text("staged\n")
    git(repo, "add", "README.md")
    (repo / "README.md").write_text("readme\n")  # worktree back to HEAD content
    plan = package_code(repo, tmp_path / "c.tar.gz")
    assert tar_contents(plan.archive_path)["README.md"] == b"readme\n"


def test_warm_call_reuses_the_cache_and_cache_survives_corruption(tmp_path):
    # how fast the warm call is lives in bench/bench_packaging.py, not here
    repo = make_repo(tmp_path / "r", {f"d{i % 10}/f{i}.py": f"x = {i}\n" * 50 for i in range(400)})
    package_code(repo, tmp_path / "a.tar.gz")
    warm = package_code(repo, tmp_path / "b.tar.gz")
    assert warm.cached is True
    # a truncated cache entry is not reused
    cached = tmp_path / "home" / "cache" / "packages" / f"{warm.fingerprint}.tar.gz"
    os.unlink(tmp_path / "a.tar.gz")
    os.unlink(tmp_path / "b.tar.gz")
    cached.write_bytes(cached.read_bytes()[:100])
    rebuilt = package_code(repo, tmp_path / "c.tar.gz")
    assert rebuilt.cached is False
    assert len(tar_contents(rebuilt.archive_path)) == 400


def test_subpath_is_archive_root(tmp_path):
    repo = make_repo(tmp_path / "r")
    (repo / "src/proj/new.py").write_text("N = 1\n")
    plan = package_code(repo, tmp_path / "c.tar.gz", subpath="src", script_path=repo / "src/proj/recipes/train.py")
    assert set(tar_contents(plan.archive_path)) == {"proj/__init__.py", "proj/util.py", "proj/recipes/train.py", "proj/new.py"}
    assert plan.script == "proj/recipes/train.py"


def test_submodule_working_tree_included(tmp_path):
    lib = make_repo(tmp_path / "lib", {"lib.py": "LIB = 1\n"})
    repo = make_repo(tmp_path / "r")
    git(repo, "submodule", "add", "-q", str(lib), "ext/lib")
    git(repo, "commit", "-qm", "sub")
    plan = package_code(repo, tmp_path / "c.tar.gz")
    assert tar_contents(plan.archive_path)["ext/lib/lib.py"] == b"LIB = 1\n"
    (repo / "ext/lib/lib.py").write_text("LIB = 9\n")  # dirty submodule
    plan2 = package_code(repo, tmp_path / "d.tar.gz")
    assert plan2.cached is False
    assert tar_contents(plan2.archive_path)["ext/lib/lib.py"] == b"LIB = 9\n"


def _big_repo(root: Path, n: int = 300) -> Path:
    repo = make_repo(root)
    for i in range(n):
        (repo / "src" / "proj" / f"m{i}.py").write_text(f"X = {i}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "many")
    return repo


def test_same_size_same_second_edit_is_noticed(tmp_path):
    repo = make_repo(tmp_path / "r")
    f = repo / "src/proj/util.py"
    first = package_code(repo, tmp_path / "a.tar.gz")
    st = f.stat()
    f.write_text(f.read_text().replace("2", "7"))  # same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime too: only ctime/content differ
    second = package_code(repo, tmp_path / "b.tar.gz")
    assert not second.cached and second.archive_sha256 != first.archive_sha256


def test_untracked_directory_contents_are_tracked(tmp_path):
    repo = make_repo(tmp_path / "r")
    (repo / "newpkg" / "deep").mkdir(parents=True)
    (repo / "newpkg" / "deep" / "a.py").write_text("A = 1\n")
    (repo / "newpkg" / "b.log").write_text("ignored\n")
    first = package_code(repo, tmp_path / "a.tar.gz")
    assert first.untracked == ["newpkg/deep/a.py"]
    assert "newpkg/deep/a.py" in tar_contents(first.archive_path)
    (repo / "newpkg" / "deep" / "a.py").write_text("A = 22\n")  # no change in any directory
    second = package_code(repo, tmp_path / "b.tar.gz")
    assert not second.cached and tar_contents(second.archive_path)["newpkg/deep/a.py"] == b"A = 22\n"


def test_large_file_list_is_read_lazily_and_survives_corruption(tmp_path):
    repo = _big_repo(tmp_path / "r")
    cold = package_code(repo, tmp_path / "a.tar.gz")
    expected = [(f.path, f.sha256, f.size, f.mode) for f in cold.files]
    assert len(expected) > 300
    cache = tmp_path / "home" / "cache" / "packages"
    sidecar = cache / f"{cold.fingerprint}.files"
    assert sidecar.exists() and json.loads((cache / f"{cold.fingerprint}.json").read_text())["files"] == []
    warm = package_code(repo, tmp_path / "b.tar.gz")
    assert warm.cached and [(f.path, f.sha256, f.size, f.mode) for f in warm.files] == expected
    assert json.loads(warm.to_json())["file_count"] == len(expected)
    assert len(json.loads(package_code(repo, tmp_path / "c.tar.gz").to_json())["files"]) == len(expected)
    # same size, garbage content: the list is rebuilt from the archive
    sidecar.write_bytes(b"x" * sidecar.stat().st_size)
    again = package_code(repo, tmp_path / "d.tar.gz")
    assert again.cached and [(f.path, f.sha256, f.size, f.mode) for f in again.files] == expected
    # truncated list: the cache entry is not trusted at all
    sidecar.write_bytes(b"{}")
    rebuilt = package_code(repo, tmp_path / "e.tar.gz")
    assert not rebuilt.cached and len(rebuilt.files) == len(expected)


def test_corrupt_cache_meta_is_ignored(tmp_path):
    repo = make_repo(tmp_path / "r")
    first = package_code(repo, tmp_path / "a.tar.gz")
    meta = tmp_path / "home" / "cache" / "packages" / f"{first.fingerprint}.json"
    meta.write_text("{not json")
    second = package_code(repo, tmp_path / "b.tar.gz")
    assert not second.cached and second.archive_sha256 == first.archive_sha256
