"""The per-artifact write lock of the fsspec registry, and create-only writes.

Every change to ``<root>/<name>/`` (allocating a version, moving aliases) happens
while holding one lock per artifact name:

- **local paths** (``file://``, including NFS and Lustre mounts): an OS file lock,
  ``fcntl.flock`` on ``<name>/.lock``. The kernel releases it when the holder
  exits, however it exits, so a crashed publisher never blocks the others. If
  the filesystem refuses ``flock`` (Lustre mounted without ``-o flock``, some
  NFS setups) the lock falls back to a lease file created with ``O_EXCL``;
- **any other fsspec URL**: a lease file ``<name>/.lease`` made with fsspec's
  create-only write (``pipe_file(mode="create")``). It excludes other publishers
  only where the store implements create-only atomically; a lease older than
  ``stale_after`` seconds is taken to be left by a crashed publisher and broken.
"""

from __future__ import annotations

import errno
import json
import os
import random
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from nemo_runspec.artifacts.errors import ArtifactError

#: ``flock`` errors that mean "this filesystem does not do flock", not "held".
_NO_FLOCK = {errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL}


def create_local_exclusive(path: str, data: bytes) -> None:
    """Write ``data`` to a new local file ``path`` in one step; ``FileExistsError`` if it exists.

    The bytes go to a temporary file first (flushed to disk) and are linked to
    ``path``: a reader sees either no file or the whole file, never a prefix.
    """
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    try:
        _write_synced(tmp, data)
        os.link(tmp, path)
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
    _sync_dir(os.path.dirname(path))


def replace_local(path: str, data: bytes) -> None:
    """Atomically replace the local file ``path`` with ``data`` (write, fsync, rename)."""
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    try:
        _write_synced(tmp, data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _sync_dir(os.path.dirname(path))


def create_remote_exclusive(fs: Any, path: str, data: bytes) -> None:
    """Create ``path`` on an fsspec filesystem, ``FileExistsError`` if it exists.

    Uses ``pipe_file(mode="create")``, which is atomic where the store makes it
    so; older fsspec without that mode gets a check-then-write.
    """
    try:
        fs.pipe_file(path, data, mode="create")
    except TypeError:  # fsspec before create-only writes
        if fs.exists(path):
            raise FileExistsError(path) from None
        fs.pipe_file(path, data)


def _write_synced(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_dir(path: str) -> None:
    try:
        fd = os.open(path or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some filesystems refuse fsync on a directory; the rename is done anyway
        pass
    finally:
        os.close(fd)


def _owner() -> str:
    import socket

    return f"pid {os.getpid()} on {socket.gethostname()}"


def _holder_text(text: str | None) -> str | None:
    """``pid N on host`` from a lock file's content (a :class:`~nemo_runspec.runtime.locks.Holder`
    line, or the plain text older versions wrote)."""
    from nemo_runspec.runtime.locks import Holder

    holder = Holder.parse(text)
    return f"pid {holder.pid} on {holder.host}" if holder else text


def _timeout_error(what: str, holder: str | None, timeout: float, hint: str) -> ArtifactError:
    held = f" (held by {holder})" if holder else ""
    return ArtifactError(f"timed out after {timeout:g}s waiting for the registry lock{held}",
                         path=what, hint=hint)


class _Backoff:
    """Short, jittered sleeps: the lock is held for milliseconds on a local disk."""

    def __init__(self, timeout: float) -> None:
        self.deadline = time.monotonic() + timeout
        self.delay = 0.002

    def wait(self) -> bool:
        """Sleep a little; False once the deadline has passed."""
        if time.monotonic() >= self.deadline:
            return False
        time.sleep(self.delay * (0.5 + random.random()))
        self.delay = min(self.delay * 2, 0.1)
        return True


class FlockLock:
    """``fcntl.flock`` on a local lock file (created if missing, never deleted)."""

    def __init__(self, path: str, *, timeout: float) -> None:
        self.path = path
        self.timeout = timeout
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock; False if this filesystem (or OS) does not support ``flock``."""
        try:
            import fcntl
        except ImportError:  # not POSIX
            return False
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except PermissionError:  # another user's lock file: flock needs no write access
            fd = os.open(self.path, os.O_RDONLY)
        backoff = _Backoff(self.timeout)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EACCES):
                    if backoff.wait():
                        continue
                    from nemo_runspec.runtime.locks import Holder, flock_timeout

                    text = _read_text(self.path)
                    os.close(fd)
                    recorded = Holder.parse(text)
                    hint = ("a publish of this artifact is stuck; if no process is publishing, check the "
                            "filesystem")
                    if recorded is not None and recorded.gone:  # a process it left behind keeps the lock
                        hint = flock_timeout(self.path, recorded, self.timeout)
                    raise _timeout_error(self.path, _holder_text(text), self.timeout, hint) from None
                os.close(fd)
                if exc.errno in _NO_FLOCK:
                    return False
                raise
        self._fd = fd
        try:  # who holds it, for the timeout message of the others
            from nemo_runspec.runtime.locks import Holder

            os.ftruncate(fd, 0)
            os.pwrite(fd, Holder.me().line().encode(), 0)
        except OSError:
            pass
        return True

    def release(self) -> None:
        """Drop the lock (closing the descriptor releases it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class LeaseLock:
    """A lock file that exists while held, made with a create-only write.

    ``create(path, data)`` must raise ``FileExistsError`` when ``path`` exists.
    A lease older than ``stale_after`` seconds is broken (its holder is taken
    to have crashed); two waiters breaking the same stale lease at once can
    both proceed, which is the limit of what a plain object store allows.
    """

    def __init__(self, path: str, *, create: Callable[[str, bytes], None], read: Callable[[str], bytes],
                 remove: Callable[[str], None], timeout: float, stale_after: float,
                 label: str | None = None) -> None:
        self.path = path
        self.label = label or path
        self.timeout = timeout
        self.stale_after = stale_after
        self._create, self._read, self._remove = create, read, remove
        self._token: str | None = None

    def _lease(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self._read(self.path).decode())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):  # being written right now: treat as fresh
            return {"time": time.time()}
        if not isinstance(data, dict):
            return {"time": 0.0}
        if not isinstance(data.get("time"), (int, float)):
            data["time"] = 0.0  # unreadable age: treat as stale
        return data

    def acquire(self) -> bool:
        """Take the lease (breaking a stale one: its holder is gone from this host, or it is
        older than ``stale_after``); always True."""
        from nemo_runspec.runtime.locks import Holder, elsewhere_hint, took_over

        token = uuid.uuid4().hex
        me = Holder.me()
        body = json.dumps({"owner": _owner(), "token": token, "time": time.time(), "pid": me.pid,
                           "host": me.host, "start": me.start, "since": me.since}).encode()
        backoff = _Backoff(self.timeout)
        while True:
            try:
                self._create(self.path, body)
                self._token = token
                return True
            except FileExistsError:
                lease = self._lease()
                holder = Holder.parse(json.dumps(lease)) if lease is not None else None
                gone = holder is not None and holder.gone
                if lease is not None and (gone or time.time() - lease["time"] > self.stale_after):
                    if gone:  # one line: a publish was killed here, its lease is taken over now
                        import sys

                        print(f"note: {took_over(holder, self.label)}", file=sys.stderr, flush=True)
                    try:
                        self._remove(self.path)
                    except FileNotFoundError:
                        pass
                    continue
                if not backoff.wait():
                    hint = (elsewhere_hint(holder, self.label) if holder is not None and not holder.here
                            else f"a lease older than {self.stale_after:g}s is broken automatically; delete the "
                                 "file if its holder is gone")
                    raise _timeout_error(self.label, (lease or {}).get("owner"), self.timeout, hint) from None

    def release(self) -> None:
        """Remove the lease if it is still ours."""
        if self._token is None:
            return
        lease = self._lease()
        if lease is not None and lease.get("token") == self._token:
            try:
                self._remove(self.path)
            except FileNotFoundError:
                pass
        self._token = None


class RegistryLock:
    """Context manager: the write lock of one artifact directory.

    ``local`` selects :class:`FlockLock` (falling back to an ``O_EXCL`` lease
    where ``flock`` is not supported); otherwise a :class:`LeaseLock` on ``fs``.
    ``url`` is how messages show ``directory`` (default: as given).
    """

    def __init__(self, fs: Any, directory: str, *, local: bool, timeout: float = 120.0,
                 stale_after: float = 300.0, url: str | None = None) -> None:
        lease_path = f"{directory}/.lease"
        label = f"{url or directory}/.lease"
        if local:
            self._flock: FlockLock | None = FlockLock(f"{directory}/.lock", timeout=timeout)
            self._lease = LeaseLock(lease_path, create=_write_synced, read=lambda p: Path(p).read_bytes(),
                                    remove=os.unlink, timeout=timeout, stale_after=stale_after, label=label)
        else:
            self._flock = None
            self._lease = LeaseLock(lease_path, create=lambda p, d: create_remote_exclusive(fs, p, d),
                                    read=fs.cat_file, remove=fs.rm_file, timeout=timeout,
                                    stale_after=stale_after, label=label)
        self._held: FlockLock | LeaseLock | None = None

    def __enter__(self) -> RegistryLock:
        if self._flock is not None and self._flock.acquire():
            self._held = self._flock
        else:
            self._lease.acquire()
            self._held = self._lease
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._held is not None:
            self._held.release()
            self._held = None


def _read_text(path: str) -> str | None:
    try:
        return Path(path).read_text().strip() or None
    except OSError:
        return None
