"""The git packager against real repositories: content, refusal, warnings, submodules, cwd."""

from __future__ import annotations

import hashlib
import os
import subprocess

import pytest

from nemo_runspec.errors import PackagingError
from nemo_runspec.packaging.git import package_git
from tests.nemo_runspec.packaging.git_repos import git, make_repo, tar_contents


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))


def test_archives_committed_files_only(tmp_path):
    repo = make_repo(tmp_path / "r")
    (repo / "notes.txt").write_text("untracked\n")
    plan = package_git(repo, tmp_path / "job" / "x.tar.gz")
    files = tar_contents(plan.archive_path)
    assert set(files) == {"src/proj/__init__.py", "src/proj/util.py", "src/proj/recipes/train.py", "README.md", ".gitignore"}
    assert files["src/proj/__init__.py"] == b"VALUE = 1\n"
    assert plan.commit == git(repo, "rev-parse", "HEAD").strip()
    assert plan.tree == git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert plan.dirty is False
    assert plan.untracked == ["notes.txt"]
    assert any("notes.txt" in w for w in plan.warnings)
    data = open(plan.archive_path, "rb").read()
    assert plan.archive_sha256 == hashlib.sha256(data).hexdigest()
    assert plan.archive_size == len(data)
    assert plan.file_count == 5


def test_refuses_uncommitted_changes_listing_paths_and_fixes(tmp_path):
    repo = make_repo(tmp_path / "r")
    (repo / "src/proj/util.py").write_text("def f():\n    return 3\n")
    (repo / "README.md").unlink()
    with pytest.raises(PackagingError) as ei:
        package_git(repo, tmp_path / "job" / "x.tar.gz")
    msg = str(ei.value)
    assert "src/proj/util.py" in msg and "README.md" in msg
    assert "2 packaged file(s)" in msg
    assert "commit or stash" in msg and 'packager = "code"' in msg and "check_uncommitted = false" in msg
    assert not (tmp_path / "job" / "x.tar.gz").exists()


def test_error_lists_only_first_paths(tmp_path):
    repo = make_repo(tmp_path / "r", {f"m{i}.py": "x\n" for i in range(9)})
    for i in range(9):
        (repo / f"m{i}.py").write_text("y\n")
    with pytest.raises(PackagingError) as ei:
        package_git(repo, tmp_path / "x.tar.gz")
    assert "and 4 more" in str(ei.value)
    assert "m8.py" not in str(ei.value)


def test_changes_outside_subpath_do_not_block(tmp_path):
    repo = make_repo(tmp_path / "r")
    (repo / "README.md").write_text("edited\n")
    plan = package_git(repo, tmp_path / "x.tar.gz", subpath="src")
    assert set(tar_contents(plan.archive_path)) == {"proj/__init__.py", "proj/util.py", "proj/recipes/train.py"}
    assert plan.dirty is False and plan.subpath == "src"
    (repo / "src/proj/util.py").write_text("changed\n")
    with pytest.raises(PackagingError, match="under src/"):
        package_git(repo, tmp_path / "y.tar.gz", subpath="src")


def test_check_uncommitted_false_warns_and_saves_diff(tmp_path, caplog):
    repo = make_repo(tmp_path / "r")
    (repo / "src/proj/util.py").write_text("def f():\n    return 3\n")
    with caplog.at_level("WARNING"):
        plan = package_git(repo, tmp_path / "job" / "x.tar.gz", check_uncommitted=False)
    assert "WITHOUT 1 uncommitted change" in caplog.text and "src/proj/util.py" in caplog.text
    # the committed content is shipped, not the edit
    assert tar_contents(plan.archive_path)["src/proj/util.py"] == b"def f():\n    return 2\n"
    assert plan.dirty is True
    assert plan.diff_summary == [{"path": "src/proj/util.py", "added": 1, "deleted": 1}]
    diff = open(plan.diff_path, "rb").read()
    assert b"+    return 3" in diff
    assert plan.diff_sha256 == hashlib.sha256(diff).hexdigest()
    assert plan.diff_path == str(tmp_path / "job" / "x.diff")


def test_runs_from_a_cwd_outside_the_repo(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "r")
    elsewhere = tmp_path / "not-a-repo"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    plan = package_git(repo, "out.tar.gz", script_path=repo / "src/proj/recipes/train.py")
    assert (elsewhere / "out.tar.gz").exists()
    assert plan.script == "src/proj/recipes/train.py"


def test_uncommitted_script_is_refused(tmp_path):
    repo = make_repo(tmp_path / "r")
    script = repo / "src/proj/recipes/new.py"
    script.write_text("print(1)\n")
    with pytest.raises(PackagingError, match="is not committed"):
        package_git(repo, tmp_path / "x.tar.gz", script_path=script)


def test_empty_repo_is_a_clear_error(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    with pytest.raises(PackagingError, match="no commits"):
        package_git(repo, tmp_path / "x.tar.gz")


def test_includes_submodules_at_recorded_commit(tmp_path):
    lib = make_repo(tmp_path / "lib", {"lib.py": "LIB = 1\n"})
    repo = make_repo(tmp_path / "r")
    git(repo, "submodule", "add", "-q", str(lib), "third_party/lib")
    git(repo, "commit", "-qm", "add submodule")
    # a later commit in the submodule's origin is NOT what the superproject records
    (lib / "lib.py").write_text("LIB = 2\n")
    git(lib, "commit", "-qam", "bump")
    plan = package_git(repo, tmp_path / "x.tar.gz")
    files = tar_contents(plan.archive_path)
    assert files["third_party/lib/lib.py"] == b"LIB = 1\n"
    assert "src/proj/util.py" in files
    plan2 = package_git(repo, tmp_path / "y.tar.gz", include_submodules=False, use_cache=False)
    assert "third_party/lib/lib.py" not in tar_contents(plan2.archive_path)


def test_archive_extracts_with_plain_tar(tmp_path):
    repo = make_repo(tmp_path / "r")
    plan = package_git(repo, tmp_path / "x.tar.gz")
    dest = tmp_path / "code"
    dest.mkdir()
    subprocess.run(["tar", "-xzf", plan.archive_path, "-C", str(dest)], check=True)
    assert (dest / "src/proj/util.py").read_text() == "def f():\n    return 2\n"
    assert os.path.isfile(dest / "README.md")
