"""Leftovers of a process that was killed (SIGKILL, OOM, a closed laptop) mid-write.

Everything we write in steps carries the writer's pid in its name (a temp
archive ``.<name>.<pid>.tmp``, a dry-run render dir ``nemotron-dryrun-<pid>-*``,
an experiment dir marked ``.nemotron-submitting.<pid>`` until Slurm accepted
the job). A later run removes those whose writer is gone: :func:`sweep`.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from nemo_runspec.runtime.procs import pid_alive  # noqa: F401 - also imported from here (data prep's output lock)

_PID = re.compile(r"(?:^|[.-])(\d+)(?:\.tmp$|-|$)")


def writer_pid(name: str) -> int | None:
    """The pid in a leftover's name (``.x.tar.gz.123.tmp``, ``nemotron-dryrun-123-ab``,
    ``.nemotron-submitting.123``), or None."""
    match = _PID.search(name)
    return int(match.group(1)) if match else None


def is_stale(path: Path) -> bool:
    """True when the process named in ``path``'s name is no longer running."""
    pid = writer_pid(path.name)
    return pid is not None and pid != os.getpid() and not pid_alive(pid)


def remove(path: Path) -> None:
    """Remove a file or a directory tree; missing is fine."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def sweep(paths: Iterable[Path]) -> list[Path]:
    """Remove each of ``paths`` whose writer is gone; return what was removed."""
    removed = []
    for path in paths:
        try:
            if is_stale(path):
                remove(path)
                removed.append(path)
        except OSError:
            continue  # another run may be sweeping the same leftover
    return removed
