"""Child processes that cannot outlive the command that started them.

A local training run, a data-prep worker pool, a local Ray instance, an ``sbatch``
that has not answered yet: if the ``nemotron`` process that started them dies
(SIGTERM, a closed terminal, SIGKILL, the OOM killer), they must die too; an
orphan would go on to publish an artifact, or submit a job, nobody asked for any
more. :func:`spawn` starts a command so that this holds:

- in a session of its own (its own process group), so a terminal's Ctrl-C reaches
  only this process, which decides what to pass on;
- with ``PR_SET_PDEATHSIG`` = SIGKILL (Linux), so the child itself is killed the
  moment this process ends, however it ends;
- registered with a *watcher*: one small process per ``nemotron`` process (started
  on first use, in a session of its own) that reads a pipe from us. When this
  process ends, the kernel closes the pipe; the watcher then stops every process
  group still registered (SIGTERM, then SIGKILL after :data:`GRACE` seconds), so
  grandchildren die too (torchrun's workers, a worker pool, Ray's raylet), which a
  parent-death signal alone would not reach.

:func:`release` unregisters a group once the caller has stopped it itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import IO, Any

#: seconds the watcher gives a group between SIGTERM and SIGKILL
GRACE = 5.0

# Run by the watcher (python -I -S): no imports beyond the standard library's core.
# "+PGID"/"-PGID" watch a process group or stop watching it; ">PATH"/"<PATH" the same
# for a path to remove once the groups are stopped; "!ID"/"~ID" for a Slurm job to scancel.
_WATCHER = r"""
import os, shutil, signal, sys, time
groups, paths, jobs = set(), [], set()
for line in sys.stdin:
    op, arg = line[:1], line[1:].rstrip("\n")
    if op in "+-" and arg.isdigit():
        (groups.add if op == "+" else groups.discard)(int(arg))
    elif op == ">":
        paths.append(arg)
    elif op == "<" and arg in paths:
        paths.remove(arg)
    elif op in "!~" and arg.isdigit():
        (jobs.add if op == "!" else jobs.discard)(arg)
def alive(g):
    try:
        os.killpg(g, 0)
        return True
    except OSError:
        return False
for sig in (signal.SIGTERM, signal.SIGKILL):
    for g in list(groups):
        try:
            os.killpg(g, sig)
        except OSError:
            groups.discard(g)
    deadline = time.monotonic() + float(sys.argv[1])
    while groups and time.monotonic() < deadline:
        groups = {g for g in groups if alive(g)}
        time.sleep(0.05)
if jobs:
    import subprocess
    try:
        subprocess.run(["scancel", *sorted(jobs)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)
    except Exception:
        pass
for path in paths:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass
"""

_PR_SET_PDEATHSIG = 1
_lock = threading.Lock()
_watcher: subprocess.Popen[bytes] | None = None
_watcher_pid_owner: int | None = None


def watcher_pid() -> int | None:
    """The pid of this process's watcher (started by the first :func:`watch`, it lives as
    long as this process), or None when there is none."""
    if _watcher is not None and _watcher_pid_owner == os.getpid() and _watcher.poll() is None:
        return _watcher.pid
    return None


def _pdeathsig_setter() -> Callable[[], None] | None:
    """A function for ``preexec_fn`` that asks the kernel to SIGKILL the child when its
    parent dies (and exits at once if the parent is already gone); None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    import signal

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def setter() -> None:  # runs in the child between fork and exec: no allocation-heavy work
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the line above
            os._exit(137)

    return setter


def _watcher_pipe() -> IO[bytes] | None:
    """The pipe to this process's watcher (started on first use); None if it cannot start."""
    global _watcher, _watcher_pid_owner
    with _lock:
        if _watcher is not None and _watcher_pid_owner == os.getpid() and _watcher.poll() is None:
            return _watcher.stdin
        try:
            _watcher = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _WATCHER, str(GRACE)], stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
        except OSError:
            _watcher = None
            return None
        _watcher_pid_owner = os.getpid()
        return _watcher.stdin


def _tell(line: str) -> None:
    pipe = _watcher_pipe()
    if pipe is None:
        return
    with _lock:  # one whole line at a time, whichever thread tells
        try:
            pipe.write(line.encode())
            pipe.flush()
        except (OSError, ValueError):  # the watcher is gone: the parent-death signal still holds
            pass


def watch(pgid: int) -> None:
    """Have the watcher stop process group ``pgid`` if this process dies before :func:`release`."""
    _tell(f"+{pgid}\n")


def release(pgid: int) -> None:
    """Stop watching ``pgid`` (the caller has waited for it, or stopped it itself)."""
    if _watcher is not None and _watcher_pid_owner == os.getpid():
        _tell(f"-{pgid}\n")


def remove_if_killed(path: str | os.PathLike[str]) -> None:
    """Have the watcher remove ``path`` (a file or a directory tree) if this process dies
    before :func:`keep` (a half-made job dir with its secrets file, say)."""
    text = os.fspath(path)
    if "\n" not in text:
        _tell(f">{text}\n")


def keep(path: str | os.PathLike[str]) -> None:
    """Cancel :func:`remove_if_killed` for ``path``."""
    if _watcher is not None and _watcher_pid_owner == os.getpid():
        _tell(f"<{os.fspath(path)}\n")


def cancel_if_killed(job_id: str) -> None:
    """Have the watcher ``scancel`` Slurm job ``job_id`` (submitted from this machine) if this
    process dies before :func:`keep_job` (a stage of a chain that is not all submitted yet)."""
    if str(job_id).isdigit():
        _tell(f"!{job_id}\n")


def keep_job(job_id: str) -> None:
    """Cancel :func:`cancel_if_killed` for ``job_id``."""
    if _watcher is not None and _watcher_pid_owner == os.getpid() and str(job_id).isdigit():
        _tell(f"~{job_id}\n")


def spawn(cmd: Sequence[str] | str, **popen_kwargs: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(cmd, **popen_kwargs)`` in a session of its own, tied to this
    process's life (see the module docstring). Call :func:`release` with its pid once
    it (and its group) is done."""
    import signal

    setter = _pdeathsig_setter()
    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    # A Ctrl-C to the whole process group can reach the child between fork and its new
    # session; with a preexec_fn, Python code runs there and our handlers (signals.install)
    # would raise in the child ("Exception ignored in _after_fork" on the user's terminal).
    # The stop signals are held back across the fork; the child takes them again, with the
    # kernel's default action, just before it runs the command.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, stops) if setter is not None else None
    if setter is not None and "preexec_fn" not in popen_kwargs:
        popen_kwargs["preexec_fn"] = _in_child(setter, stops, held)
    popen_kwargs["start_new_session"] = True
    try:
        child = subprocess.Popen(cmd, **popen_kwargs)
        watch(child.pid)
    finally:
        if held is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
    return child


def _in_child(setter: Callable[[], None], stops: tuple[int, ...], mask: Iterable[int]) -> Callable[[], None]:
    """The child's set-up between fork and exec: the parent-death signal, then the stop
    signals back to what exec would give them (default unless ignored) and unblocked."""
    import signal

    def run() -> None:
        setter()
        for sig in stops:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    return run


def stop_group(pgid: int, *, grace: float = GRACE) -> None:
    """SIGTERM process group ``pgid``, SIGKILL it after ``grace`` seconds if anything is
    left, and stop watching it."""
    import signal
    import time

    signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and group_alive(pgid):
        time.sleep(0.05)
    if group_alive(pgid):
        signal_group(pgid, signal.SIGKILL)
    release(pgid)


def group_alive(pgid: int) -> bool:
    """True while process group ``pgid`` has a member."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to process group ``pgid``; a group already gone (or not ours) is let be."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def descendants(pid: int) -> list[int]:
    """The pids of every process below ``pid`` (children first), read from ``/proc``."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # the fields after the command name, which is in parentheses and may hold anything
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = list(children.get(pid, []))
    while todo:
        p = todo.pop(0)
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and every process below it (a command some library started in our
    own process group, which we cannot signal as a group without signalling ourselves).

    A look at ``/proc`` is a snapshot: a process that forks after it (a shell script
    starting its next step) would leave a child behind, reparented away from the tree and
    holding the pipes our caller waits on. So the tree is frozen first (SIGSTOP; a stopped
    process cannot fork), looked at again until no new process shows up, then killed."""
    import signal

    frozen: list[int] = []
    while new := [p for p in (pid, *descendants(pid)) if p not in frozen]:
        for p in new:
            _send(p, signal.SIGSTOP)
        frozen.extend(new)
    for p in frozen:
        _send(p, signal.SIGKILL)


def _send(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
