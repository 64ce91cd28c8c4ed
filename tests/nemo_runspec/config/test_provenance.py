"""Where a job's code came from (config/provenance.py), read from real git repositories."""

from __future__ import annotations

import os
import subprocess

from nemo_runspec import __version__
from nemo_runspec.config.provenance import collect_provenance, git_info

GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=GIT_ENV).stdout.strip()


def test_outside_a_repo_there_is_no_git_info(tmp_path):
    assert git_info(tmp_path) is None


def test_a_repo_without_commits_has_no_commit(tmp_path):
    git(tmp_path, "init", "-q", "-b", "main")
    assert git_info(tmp_path) == {"commit": None, "dirty": False, "branch": "main"}


def test_commit_branch_and_dirty_tracked_files_only(tmp_path):
    git(tmp_path, "init", "-q", "-b", "work")
    (tmp_path / "train.py").write_text("print(1)\n")
    git(tmp_path, "add", "train.py")
    git(tmp_path, "commit", "-qm", "one")
    head = git(tmp_path, "rev-parse", "HEAD")
    (tmp_path / "untracked.txt").write_text("x")
    assert git_info(tmp_path / "train.py") == {"commit": head, "dirty": False, "branch": "work"}
    (tmp_path / "train.py").write_text("print(2)\n")
    assert git_info(tmp_path)["dirty"] is True
    git(tmp_path, "checkout", "-q", "--detach")
    assert git_info(tmp_path)["branch"] is None


def test_provenance_names_version_time_host_and_git(tmp_path):
    import socket

    out = collect_provenance(tmp_path)
    assert out["git"] is None and out["version"] == __version__
    assert out["host"] == socket.gethostname()
    assert out["time"].endswith("+00:00") and "T" in out["time"]
