"""Running git, and finding the repository a script is in, as git is found on this machine.

A packager that cannot ask git about a script's repository must not decide the
script is outside one: that would ship the script alone (``self_contained``)
where the user meant the repository. So "not inside a repository" is only what
git says it is (``not a git repository``); git missing from ``PATH`` while a
``.git`` lies above the script, git refusing the repository (``detected dubious
ownership``: it belongs to another user) or any other git failure is a
:class:`~nemo_runspec.errors.PackagingError` naming the cause and the fix.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

from nemo_runspec.errors import PackagingError

#: What to do when git is not on PATH.
NO_GIT_HINT = ("install git (Debian: apt-get install git) or put it on PATH; a script that needs no "
               "repository can be shipped alone with packager = \"self_contained\" (or \"none\": code already "
               "on the cluster)")


def run_git(args: list[str], cwd: str | Path, *, check: bool = True, env: dict[str, str] | None = None) -> bytes:
    """Run ``git <args>`` in ``cwd`` and return stdout; failures become PackagingError."""
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False, env=env)
    except FileNotFoundError:
        raise PackagingError(f"git is not on PATH (needed to read the repository at {cwd})",
                             hint=NO_GIT_HINT) from None
    if check and proc.returncode != 0:
        msg = proc.stderr.decode(errors="replace").strip().splitlines()
        _refuse_unhashable(msg, cwd)
        refused = _refusal(msg, cwd)
        if refused is not None:
            raise refused
        raise PackagingError(
            f"git {' '.join(args[:2])} failed: {msg[-1] if msg else 'exit ' + str(proc.returncode)}",
            path=str(cwd),
        )
    return proc.stdout


def _refuse_unhashable(stderr_lines: list[str], cwd: str | Path) -> None:
    """git's ``cannot hash <path>`` (``git diff HEAD`` on a tracked file that is now a
    FIFO, socket or device): name the file and what it is, as every packager does."""
    for line in stderr_lines:
        m = re.search(r"cannot hash (.+?)\s*$", line)
        if not m:
            continue
        path = Path(cwd) / m.group(1)
        try:
            mode = path.lstat().st_mode
        except OSError:
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            from nemo_runspec.packaging._archive import raise_not_regular

            raise_not_regular([(str(path), mode)])


_DUBIOUS = re.compile(r"detected dubious ownership in repository at '(.+)'")


def _refusal(stderr_lines: list[str], cwd: str | Path) -> PackagingError | None:
    """git's refusal to read a repository owned by someone else, as one line with the fix."""
    for line in stderr_lines:
        m = _DUBIOUS.search(line)
        if m is None:
            continue
        repo = m.group(1)
        try:
            owner = os.stat(repo).st_uid
            whose = f"owned by uid {owner}, not by you (uid {os.geteuid()})"
        except OSError:
            whose = "owned by another user"
        return PackagingError(
            f"git refuses to read the repository at {repo}: it is {whose} (git's safe.directory check), so "
            "what it holds cannot be packaged",
            path=str(cwd),
            hint=f"if you trust it: git config --global --add safe.directory {repo}; else package from a "
                 "clone you own")
    return None


def find_repo_root(path: str | Path) -> Path | None:
    """Top level of the git work tree containing ``path`` (file or dir); None when git says
    it is not inside one. git missing while a ``.git`` lies above ``path``, git refusing
    the repository, or another git failure is a :class:`PackagingError` (never None:
    the caller would ship something other than the repository)."""
    p = Path(path).resolve()
    d = p if p.is_dir() else p.parent
    while not d.exists():
        d = d.parent
    try:
        proc = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=d, capture_output=True, text=True)
    except FileNotFoundError:
        dotgit = next((parent for parent in (d, *d.parents) if (parent / ".git").exists()), None)
        if dotgit is None:
            return None  # no repository here by the file system either: nothing git would tell us
        raise PackagingError(f"git is not on PATH, and {p} is inside the git repository at {dotgit}, which only "
                             "git can read (what it tracks, what is committed)", hint=NO_GIT_HINT) from None
    if proc.returncode == 0:
        return Path(proc.stdout.strip()).resolve()
    lines = proc.stderr.strip().splitlines()
    refused = _refusal(lines, d)
    if refused is not None:
        raise refused
    if any("not a git repository" in line for line in lines):
        return None
    said = lines[-1] if lines else f"exit {proc.returncode}"
    raise PackagingError(f"git cannot tell which repository {p} is in: {said}", path=str(d),
                         hint='fix the repository (git status says more), or use packager = "self_contained" '
                              "to ship the script alone")

