"""Is that process still the one we mean? Pids are reused; a pid with its start time is not.

A lock file, a leftover's name or a child's note of who started it records a pid.
Once that process is gone the pid may be given to another process, and "pid 123
is alive" then says nothing. :func:`identity` pairs the pid with the process's
start time (``/proc/<pid>/stat`` field 22, clock ticks since boot) and
:func:`is_running` checks both, so a reused pid counts as gone.
"""

from __future__ import annotations

import os
import socket


def _stat(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (which may hold anything)."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            stat = f.read()
    except (OSError, ValueError):
        return None
    return stat[stat.rfind(b")") + 2:].split()


def start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot), or None when there is no such
    process (or no ``/proc`` to ask)."""
    fields = _stat(pid)
    try:
        return int(fields[19]) if fields else None
    except (IndexError, ValueError):
        return None


def is_zombie(pid: int) -> bool:
    """True when ``pid`` has exited and only waits for its parent to collect it."""
    fields = _stat(pid)
    return bool(fields) and fields[0] in (b"Z", b"X")


def pid_alive(pid: int) -> bool:
    """True while a process with ``pid`` exists (ours or another user's)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def identity(pid: int | None = None) -> str:
    """``"<pid>:<start time>"`` of ``pid`` (default: this process)."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{start_time(pid) or 0}"


def is_running(pid: int, started: int | None = None) -> bool:
    """True while process ``pid`` exists and, when ``started`` is given (and ``/proc``
    can say), started at that time: a pid reused by another process is not running."""
    if not pid_alive(pid) or is_zombie(pid):
        return False
    if not started:
        return True
    now = start_time(pid)
    return now is None or now == started


def identity_running(ident: str) -> bool:
    """:func:`is_running` for an :func:`identity` string (malformed: not running)."""
    pid, _, started = ident.partition(":")
    try:
        return is_running(int(pid), int(started or 0))
    except ValueError:
        return False


def this_host() -> str:
    """The host name locks and notes record (processes elsewhere cannot be checked)."""
    return socket.gethostname()
