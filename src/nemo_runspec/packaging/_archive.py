"""Deterministic ``.tar.gz`` writing shared by the packagers.

Entries get fixed metadata (mtime, uid/gid 0, no user/group names, mode 0644
or 0755) and the gzip header carries no name or timestamp, so the same input
files in the same order always give byte-identical archives.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from nemo_runspec.packaging.manifest import FileEntry
from nemo_runspec.packaging.progress import ProgressEvent

#: Fixed mtime of every archive entry (2000-01-01T00:00:00Z).
FIXED_MTIME = 946684800


class _HashingWriter(io.RawIOBase):
    """File wrapper that hashes and counts what is written through it."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.sha = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[override]
        self.sha.update(data)
        self.size += len(data)
        self.raw.write(data)
        return len(data)


def file_kind(mode: int) -> str:
    """``"FIFO"``, ``"socket"``, ``"device"``... for a non-regular ``st_mode``."""
    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISDIR, "directory")):
        if test(mode):
            return name
    return "special file"


def raise_not_regular(found: list[tuple[str, int]]) -> None:
    """A one-line :class:`PackagingError` naming the files that are not regular files or symlinks."""
    from nemo_runspec.errors import PackagingError

    shown = ", ".join(f"{path} ({file_kind(mode)})" for path, mode in found[:3])
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    raise PackagingError(f"cannot package {shown}{more}: only regular files and symlinks can be shipped",
                         hint="remove or move it, or keep it out of what is packaged (.gitignore for code, "
                              "the include pattern for pattern)")


def check_utf8_name(name: str, path: str | os.PathLike[str] | None = None) -> None:
    """A one-line :class:`PackagingError` naming ``path`` (default ``name``) when ``name``, a
    file's name in the archive, is not UTF-8: the archive's manifest (``packaging.json``) and
    the cache key name files in UTF-8, and a job on another machine may not read raw bytes."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        from nemo_runspec.errors import PackagingError

        shown = os.fsencode(os.fspath(path if path is not None else name)).decode("utf-8", "backslashreplace")
        raise PackagingError(f"cannot package {shown}: its name is not UTF-8, and packaging.json and the "
                             "archive name files in UTF-8", hint="rename it, or keep it out of what is packaged "
                             "(.gitignore for code, the include pattern for pattern)") from None


def normal_mode(mode: int) -> int:
    """0o755 for anything executable by its owner, else 0o644."""
    return 0o755 if mode & stat.S_IXUSR else 0o644


class Ticker:
    """Throttled progress reporting: silent for the first ``delay`` seconds."""

    def __init__(
        self,
        progress: Callable[[ProgressEvent], None] | None,
        stage: str,
        *,
        delay: float = 0.5,
        interval: float = 0.1,
        total_files: int | None = None,
        total_bytes: int | None = None,
    ) -> None:
        self.progress = progress
        self.stage = stage
        self.start = time.perf_counter()
        self.delay = delay
        self.interval = interval
        self.last = 0.0
        self.shown = False
        self.files = 0
        self.bytes = 0
        self.total_files = total_files
        self.total_bytes = total_bytes

    def tick(self, files: int = 0, nbytes: int = 0) -> None:
        """Count work done; report it when it has taken long enough."""
        self.files += files
        self.bytes += nbytes
        if self.progress is None:
            return
        now = time.perf_counter()
        if now - self.start < self.delay or now - self.last < self.interval:
            return
        self.last = now
        self.shown = True
        self.progress(self._event(done=False))

    def finish(self, message: str = "") -> None:
        """Send the closing event, only if progress was shown at all."""
        if self.progress is not None and self.shown:
            self.progress(self._event(done=True, message=message))

    def _event(self, *, done: bool, message: str = "") -> ProgressEvent:
        return ProgressEvent(
            stage=self.stage,
            files_done=self.files,
            files_total=self.total_files,
            bytes_done=self.bytes,
            bytes_total=self.total_bytes,
            elapsed=time.perf_counter() - self.start,
            done=done,
            message=message,
        )


class DeterministicTar:
    """Write a reproducible ``.tar.gz`` atomically (temp file, then rename).

    Use as a context manager; on error the temp file is removed and the target
    is left untouched. After a clean exit ``sha256`` and ``size`` describe the
    compressed archive, ``entries`` the files added.
    """

    def __init__(self, out_path: str | Path, *, compresslevel: int = 1, ticker: Ticker | None = None) -> None:
        self.out_path = Path(out_path)
        self.tmp_path = self.out_path.with_name(f".{self.out_path.name}.{os.getpid()}.tmp")
        self.compresslevel = compresslevel
        self.ticker = ticker
        self.entries: list[FileEntry] = []
        self.sha256: str | None = None
        self.size: int | None = None
        self._dirs: set[str] = set()

    def __enter__(self) -> DeterministicTar:
        self.out_path.parent.mkdir(parents=True, exist_ok=True)
        self._raw = open(self.tmp_path, "wb")
        self._hw = _HashingWriter(self._raw)
        self._gz = gzip.GzipFile(filename="", mode="wb", compresslevel=self.compresslevel, fileobj=self._hw, mtime=0)
        self._tar = tarfile.open(fileobj=self._gz, mode="w|", format=tarfile.GNU_FORMAT)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self._tar.close()
            self._gz.close()
            self._raw.close()
        finally:
            if exc_type is not None:
                self.tmp_path.unlink(missing_ok=True)
        if exc_type is None:
            self.sha256 = self._hw.sha.hexdigest()
            self.size = self._hw.size
            os.replace(self.tmp_path, self.out_path)

    def _info(self, arcname: str, *, type_: bytes = tarfile.REGTYPE, mode: int = 0o644, size: int = 0) -> tarfile.TarInfo:
        check_utf8_name(arcname)
        info = tarfile.TarInfo(arcname)
        info.type = type_
        info.mode = mode
        info.size = size
        info.mtime = FIXED_MTIME
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    def _parents(self, arcname: str) -> None:
        parts = arcname.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in self._dirs:
                self._dirs.add(d)
                self._tar.addfile(self._info(d, type_=tarfile.DIRTYPE, mode=0o755))

    def add_path(self, arcname: str, path: str | Path) -> FileEntry | None:
        """Add a regular file or symlink from disk; returns its entry (None for symlinks)."""
        st = os.lstat(path)
        self._parents(arcname)
        if stat.S_ISLNK(st.st_mode):
            info = self._info(arcname, type_=tarfile.SYMTYPE, mode=0o777)
            info.linkname = os.readlink(path)
            self._tar.addfile(info)
            return None
        if not stat.S_ISREG(st.st_mode):  # opening a FIFO would block forever
            raise_not_regular([(str(path), st.st_mode)])
        mode = normal_mode(st.st_mode)
        with open(path, "rb") as f:
            data = f.read()
        return self.add_bytes(arcname, data, mode=mode)

    def add_bytes(self, arcname: str, data: bytes, *, mode: int = 0o644) -> FileEntry:
        """Add a regular file with the given content."""
        self._parents(arcname)
        self._tar.addfile(self._info(arcname, mode=mode, size=len(data)), io.BytesIO(data))
        entry = FileEntry(path=arcname, sha256=hashlib.sha256(data).hexdigest(), size=len(data), mode=mode)
        self.entries.append(entry)
        if self.ticker is not None:
            self.ticker.tick(files=1, nbytes=len(data))
        return entry

    def add_member(self, info: tarfile.TarInfo, fileobj: BinaryIO | None, arcname: str) -> None:
        """Copy a member read from another tar stream (git archive output) under ``arcname``."""
        if info.isdir():
            d = arcname.rstrip("/")
            if d and d not in self._dirs:
                self._parents(d + "/x")
            return
        if info.issym():
            self._parents(arcname)
            new = self._info(arcname, type_=tarfile.SYMTYPE, mode=0o777)
            new.linkname = info.linkname
            self._tar.addfile(new)
            return
        if info.isfile():
            data = fileobj.read() if fileobj is not None else b""
            self.add_bytes(arcname, data, mode=normal_mode(info.mode))
