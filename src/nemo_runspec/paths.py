"""Local paths used by nemotron: ``$NEMOTRON_HOME`` and what lives under it.

``NEMOTRON_HOME`` defaults to ``~/.nemotron``; it holds local job directories
(``jobs/``, with the submission ledger ``jobs/submissions.jsonl``), pipeline
records (``pipes/``) and caches (``cache/``). Nothing here creates directories unasked:
callers create what they write, through :func:`ensure_dir`, so that a directory
that cannot be created (a read-only ``NEMOTRON_HOME``) is a one-line
:class:`~nemo_runspec.errors.LocalPathError` naming it and saying what to do.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nemo_runspec.errors import DiskFullError, LocalPathError

DEFAULT_HOME = "~/.nemotron"


def nemotron_home() -> Path:
    """``$NEMOTRON_HOME`` (an empty value counts as unset), default ``~/.nemotron``."""
    return Path(os.environ.get("NEMOTRON_HOME") or DEFAULT_HOME).expanduser()


#: variables that name a place on this machine: made absolute once, when a command starts
PLACE_VARIABLES = ("NEMOTRON_HOME", "NEMOTRON_ARTIFACTS_ROOT")


def pin_relative_places(environ: dict[str, str] | None = None) -> None:
    """Make a relative ``NEMOTRON_HOME`` / ``NEMOTRON_ARTIFACTS_ROOT`` absolute, against the
    directory the command started in, in ``environ`` (default ``os.environ``): every job,
    stage and child process then means the same place (a local job runs in its own job
    dir, where ``reg`` would be another registry). URLs (``wandb://``, ``s3://``) and
    absolute paths are left alone; ``~`` is expanded."""
    env = os.environ if environ is None else environ
    for name in PLACE_VARIABLES:
        value = env.get(name)
        if value and "://" not in value:
            expanded = os.path.expanduser(value)
            if not os.path.isabs(expanded) or expanded != value:
                env[name] = os.path.abspath(expanded)


def jobs_dir() -> Path:
    """Where local job directories go: ``$NEMOTRON_HOME/jobs``."""
    return nemotron_home() / "jobs"


def cache_dir() -> Path:
    """Where caches go: ``$NEMOTRON_HOME/cache``."""
    return nemotron_home() / "cache"


def pipes_dir() -> Path:
    """Where pipeline records go: ``$NEMOTRON_HOME/pipes/<pipe id>.json``."""
    return nemotron_home() / "pipes"


def _under_home(path: Path) -> bool:
    home = nemotron_home().absolute()
    target = path.absolute()
    return target == home or home in target.parents


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def disk_of(path: str | os.PathLike[str]) -> str:
    """The file system holding ``path`` in words: ``the file system mounted at /scratch
    (4.0 KiB free of 64.0 KiB)``; its nearest existing directory is looked at."""
    p = Path(os.path.abspath(os.fspath(path)))
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        dev = p.stat().st_dev
        mount = p
        while mount != mount.parent and mount.parent.stat().st_dev == dev:
            mount = mount.parent
        vfs = os.statvfs(p)
    except OSError:
        return f"the file system holding {p}"
    free, total = vfs.f_bavail * vfs.f_frsize, vfs.f_blocks * vfs.f_frsize
    return f"the file system mounted at {mount} ({_size(free)} free of {_size(total)})"


def path_error(
    exc: OSError, path: str | os.PathLike[str], action: str, *, shown: str | os.PathLike[str] | None = None
) -> LocalPathError | DiskFullError:
    """``exc`` (raised while trying to ``action`` ``path``) as a one-line error naming the
    path that failed (``shown``, default the file ``exc`` names, else ``path``) and how
    to fix it; paths under ``$NEMOTRON_HOME`` say so. A full file system (or quota) is a
    :class:`~nemo_runspec.errors.DiskFullError` (an execution error) naming the file system."""
    from nemo_runspec.errors import DiskFullError, LocalPathError

    if shown is None:
        shown = exc.filename if getattr(exc, "filename", None) else path
    failed = Path(os.fsdecode(shown))
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        disk = disk_of(failed)
        if _under_home(Path(path)):
            home = (f"$NEMOTRON_HOME is {nemotron_home()}" if os.environ.get("NEMOTRON_HOME")
                    else f"NEMOTRON_HOME is not set, so {nemotron_home()} is used")
            hint = f"free space there, or point NEMOTRON_HOME at a disk with room ({home})"
        else:
            hint = "free space there, or choose a directory on a disk with room"
        return DiskFullError(f"cannot {action}: {reason}: {disk} is full", path=failed, hint=hint)
    if _under_home(Path(path)):
        if os.environ.get("NEMOTRON_HOME"):
            where = f"$NEMOTRON_HOME is {nemotron_home()}"
        else:
            where = f"NEMOTRON_HOME is not set, so {nemotron_home()} is used"
        if exc.errno in (errno.ENOTDIR, errno.EEXIST):
            hint = f"{where}: a part of that path is a file, not a directory; point NEMOTRON_HOME elsewhere"
        else:
            hint = f"{where}: make it writable, or point NEMOTRON_HOME at a writable directory"
    elif exc.errno in (errno.ENOTDIR, errno.EEXIST):
        hint = "a part of that path is a file, not a directory"
    else:
        hint = "make it writable, or choose another directory"
    return LocalPathError(f"cannot {action}: {reason}", path=failed, hint=hint)


def ensure_dir(path: str | os.PathLike[str], *, action: str = "create directory") -> Path:
    """Create directory ``path`` (and its parents) unless it exists; return it.

    An :class:`OSError` (read-only or full file system, a file in the way)
    becomes :class:`~nemo_runspec.errors.LocalPathError` (see :func:`path_error`).
    """
    target = Path(path).expanduser()
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise path_error(exc, target, action) from exc
    return target
