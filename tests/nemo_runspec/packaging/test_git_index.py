"""The private copy of a repository's index that ``git status`` works on (packaging/git_index.py),
on real git repositories: a copy per staged state, the user's index only read, none where a copy
could mislead."""

from __future__ import annotations

import os
import subprocess

from nemo_runspec.packaging.git_index import private_index
from tests.nemo_runspec.packaging.git_repos import git, make_repo


def _status(repo, index):
    env = {"GIT_INDEX_FILE": str(index)} if index else {}
    return subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True,
                          env={**os.environ, **env}, check=True).stdout


def test_the_copy_gives_the_same_status_and_leaves_the_real_index_alone(tmp_path):
    repo = make_repo(tmp_path / "r")
    (repo / "new.txt").write_text("x")
    real = repo / ".git" / "index"
    before = real.read_bytes()
    copy = private_index(repo, tmp_path / "cache")
    assert copy is not None and copy.parent == tmp_path / "cache"
    assert copy.read_bytes() == before
    assert _status(repo, copy) == _status(repo, None)
    assert real.read_bytes() == before


def test_the_same_index_gives_the_same_copy_and_a_new_staged_state_a_new_one(tmp_path):
    repo = make_repo(tmp_path / "r")
    first = private_index(repo, tmp_path / "cache")
    assert private_index(repo, tmp_path / "cache") == first
    (repo / "new.txt").write_text("x")
    git(repo, "add", "new.txt")
    second = private_index(repo, tmp_path / "cache")
    assert second != first
    assert "A  new.txt" in _status(repo, second)


def test_no_copy_outside_a_repo_or_with_git_location_variables(tmp_path, monkeypatch):
    assert private_index(tmp_path, tmp_path / "cache") is None
    repo = make_repo(tmp_path / "r")
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    assert private_index(repo, tmp_path / "cache") is None


def test_no_copy_with_a_split_index(tmp_path):
    repo = make_repo(tmp_path / "r")
    git(repo, "update-index", "--split-index")
    assert private_index(repo, tmp_path / "cache") is None
