"""Lock files that name their holder, and one rule for a holder that is gone.

Every lock we take (a data prep's output dir, the artifact registry's lease, the
submission ledger) records who holds it: host, pid, the process's start time and
since when (:class:`Holder`). When a lock is found taken:

- its holder runs on this host and is gone (no such pid, or the pid now belongs
  to a process that started at another time: :mod:`nemo_runspec.runtime.procs`): the lock
  is taken over, and the caller says so in one line (:func:`took_over`);
- its holder runs on another host: it cannot be checked from here; the error
  names the host and how to clear the lock if that run is gone;
- its holder runs here: the lock is busy (the caller waits or refuses).

:class:`HolderLock` is such a lock: a file that exists while held, created with
``O_EXCL`` and holding its holder's line; a takeover happens under a short
``flock`` on the lock's directory so two processes cannot both take over one
dead holder's lock. It is never inherited: a kernel ``flock`` held through a
descriptor that a forked child inherited outlives the process that took it, which
is how a dead data prep's pid could still "hold" its directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from nemo_runspec.runtime.procs import is_running, start_time, this_host


@dataclass(frozen=True)
class Holder:
    """Who holds a lock: ``host``, ``pid``, its ``start`` time (clock ticks since boot,
    0 when unknown) and ``since`` (local time, for people)."""

    host: str
    pid: int
    start: int = 0
    since: str = ""

    @classmethod
    def me(cls) -> Holder:
        """This process as a holder: host, pid, its start time and now."""
        return cls(this_host(), os.getpid(), start_time(os.getpid()) or 0,
                   time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime()))

    @classmethod
    def parse(cls, text: str | None) -> Holder | None:
        """The holder a lock file's line names (None for an empty or unreadable line)."""
        try:
            data = json.loads(text or "")
            return cls(str(data["host"]), int(data["pid"]), int(data.get("start") or 0), str(data.get("since", "")))
        except (ValueError, KeyError, TypeError):
            return None

    def line(self) -> str:
        """The holder as the lock file's one JSON line (what :meth:`parse` reads)."""
        return json.dumps({"pid": self.pid, "host": self.host, "start": self.start, "since": self.since})

    def describe(self) -> str:
        """``pid 123 on host, since 2025-01-01T10:00:00``."""
        return f"pid {self.pid} on {self.host}" + (f", since {self.since}" if self.since else "")

    @property
    def here(self) -> bool:
        """Whether the holder runs on this host (only then can its pid be checked)."""
        return self.host == this_host()

    @property
    def gone(self) -> bool:
        """True when the holder ran on this host and no longer runs (its pid gone or reused)."""
        return self.here and not is_running(self.pid, self.start)


def elsewhere_hint(holder: Holder, path: str | os.PathLike[str]) -> str:
    """How to clear a lock held from another host, which cannot be checked from here."""
    return (f"it is held from {holder.host}, which this machine cannot check: if that run is gone "
            f"(see ps -p {holder.pid} on {holder.host}), delete {path} and run again")


def took_over(holder: Holder, path: str | os.PathLike[str]) -> str:
    """The one line that says a dead holder's lock was taken over."""
    return f"took over the lock {path}: its holder ({holder.describe()}) is gone"


class Busy(Exception):
    """The lock is held by a live process here, or by one on another host."""

    def __init__(self, holder: Holder | None, path: str) -> None:
        self.holder, self.path = holder, path
        super().__init__(holder.describe() if holder else "a process that did not say who it is")


@contextlib.contextmanager
def _guard(path: str) -> Iterator[None]:
    """A short exclusive ``flock`` on the directory holding ``path`` (no file of its own to
    leave behind; nothing where the filesystem does not support it)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    try:
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass  # no flock here: the O_EXCL create still decides between two takers
        yield
    finally:
        os.close(fd)


class HolderLock:
    """A lock file naming its holder, taken over when the holder is gone (module docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._me: Holder | None = None

    def holder(self) -> Holder | None:
        """Who holds the lock now, as its file says, or None (no file, or not readable)."""
        try:
            return Holder.parse(Path(self.path).read_text(encoding="utf-8"))
        except OSError:
            return None

    def try_acquire(self) -> Holder | None:
        """Take the lock now; return the gone holder it was taken over from (None if it was
        free). Raises :class:`Busy` when a live process (or one on another host) holds it."""
        me = Holder.me()
        for _ in range(3):
            if self._create(me):
                self._me = me
                return None
            with _guard(self.path):
                holder = self.holder()
                if holder is None and not os.path.exists(self.path):
                    continue  # released meanwhile: try again
                if holder is not None and not holder.gone:
                    raise Busy(holder, self.path)
                if holder is None and time.time() - _mtime(self.path) < 5:
                    raise Busy(None, self.path)  # being written this very moment
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)
                if self._create(me):
                    self._me = me
                    return holder  # None: an empty file (a clean exit of an older version) is no holder
        raise Busy(self.holder(), self.path)

    def acquire(self, timeout: float) -> Holder | None:
        """:meth:`try_acquire`, waiting up to ``timeout`` seconds while a live holder here has it."""
        deadline = time.monotonic() + timeout
        delay = 0.005
        while True:
            try:
                return self.try_acquire()
            except Busy as busy:
                if busy.holder is not None and not busy.holder.here or time.monotonic() >= deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    def _create(self, me: Holder) -> bool:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            return False
        try:
            os.write(fd, me.line().encode())
        finally:
            os.close(fd)
        return True

    def release(self) -> None:
        """Remove the lock file if it still names this holder."""
        if self._me is None:
            return
        if self.holder() == self._me:  # only a process that took us for gone could have replaced it
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        self._me = None


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def open_by(path: str | os.PathLike[str]) -> list[int]:
    """Pids of the processes on this host that have ``path`` open (``/proc/*/fd``): who
    holds a kernel ``flock`` on it, since the pid that took one may have died and left
    it to a child that inherited the descriptor."""
    target = os.path.realpath(path)
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{entry}/fd/{fd}") == target:
                    found.append(int(entry))
                    break
            except OSError:
                continue
    return found


def flock_timeout(path: str | os.PathLike[str], recorded: Holder | None, waited: float) -> str:
    """Why a kernel ``flock`` on ``path`` was not had within ``waited`` seconds: who took it
    (``recorded``) and, when that process is gone, which processes still hold it."""
    holders = open_by(path)
    who = recorded.describe() if recorded else "another process"
    text = f"{path} stayed locked for {waited:g}s (taken by {who})"
    if recorded is not None and recorded.gone:
        rest = ", ".join(f"pid {p}" for p in holders) or "a process this user cannot see"
        text += f"; that process is gone, but {rest} still holds it (a process it left behind: stop it)"
    elif holders:
        text += f"; held now by {', '.join(f'pid {p}' for p in holders)}"
    return text


def flock_within(fd: int, path: str | os.PathLike[str], *, timeout: float) -> bool:
    """Take an exclusive kernel ``flock`` on ``fd`` (the file ``path``) within ``timeout``
    seconds. False where the filesystem has no ``flock``; :class:`TimeoutError` saying who
    keeps it (:func:`flock_timeout`) when it stays held."""
    import errno
    import fcntl

    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                return False
        if time.monotonic() >= deadline:
            raise TimeoutError(flock_timeout(path, None, timeout))
        time.sleep(0.01)
