"""The packaging cache's private git index follows the lock rule: git's own lock left by a
``git status`` that was killed is taken over (git writes no pid into it: an age well past
any status run counts), with one line; a fresh one is left to the git that holds it."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from nemo_runspec.packaging.git import git_status, private_index


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.py").write_text("x = 1\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"],
                   check=True)
    return repo


def test_a_killed_git_status_lock_is_taken_over_and_the_copy_is_saved_again(tmp_path, capfd):
    repo = _repo(tmp_path)
    cache = tmp_path / "git-index"
    git_status(repo, index_dir=cache)
    index = private_index(repo, cache)
    assert index is not None and index.exists()
    lock = index.with_name(index.name + ".lock")
    lock.write_bytes(b"")  # what a git killed while it refreshed the copy leaves
    old = time.time() - 3600  # an hour: no git status holds it that long
    os.utime(lock, (old, old))
    (repo / "new.py").write_text("y = 2\n")
    status = git_status(repo, index_dir=cache)
    assert [e.path for e in status.entries] == ["new.py"]
    assert not lock.exists()
    assert f"took over the git lock {lock}" in capfd.readouterr().err


def test_a_fresh_lock_is_left_alone(tmp_path):
    repo = _repo(tmp_path)
    cache = tmp_path / "git-index"
    git_status(repo, index_dir=cache)
    index = private_index(repo, cache)
    lock = index.with_name(index.name + ".lock")
    lock.write_bytes(b"")
    git_status(repo, index_dir=cache)
    assert lock.exists()
