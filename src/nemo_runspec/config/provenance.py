"""Provenance of a job: where its code came from, when, on which host, by whom.

Recorded in ``run.provenance`` of every job config (see :mod:`nemo_runspec.config.job_config`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def git_info(start: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
    """``{commit, dirty, branch}`` of the git repo containing ``start`` (default cwd).

    ``commit`` is None in a repo without commits, ``branch`` None on a detached
    HEAD; ``dirty`` counts changes to tracked files only (untracked files are not
    part of a commit either way). Returns None outside a repo or without git.
    """
    import subprocess

    d = Path(start) if start is not None else Path.cwd()
    if not d.is_dir():
        d = d.parent
    if not d.is_dir():
        d = Path.cwd()
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "-C", str(d), *args], capture_output=True, text=True, timeout=15, env=env
        )

    try:
        if git("rev-parse", "--is-inside-work-tree").stdout.strip() != "true":
            return None
        head = git("rev-parse", "--verify", "-q", "HEAD^{commit}")
        branch = git("symbolic-ref", "--short", "-q", "HEAD")
        status = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return {
        "commit": head.stdout.strip() or None if head.returncode == 0 else None,
        "dirty": bool(status.stdout.strip()) if status.returncode == 0 else None,
        "branch": branch.stdout.strip() or None if branch.returncode == 0 else None,
    }


def collect_provenance(script_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """``{git, version, time, host, user}`` for the job being built."""
    import datetime
    import getpass
    import socket

    from nemo_runspec import __version__

    try:
        user: str | None = getpass.getuser()
    except Exception:  # no passwd entry and no LOGNAME/USER in a container
        user = None
    return {
        "git": git_info(script_path),
        "version": __version__,
        "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "user": user,
    }
