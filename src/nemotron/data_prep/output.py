"""What a data prep may do in its output directory: one writer at a time, and only its own files.

- **One writer.** ``<out>/.nemotron-data-prep.lock`` is held (``fcntl.flock``, the
  registry's :class:`~nemo_runspec.artifacts.locking.FlockLock`) from the plan to
  the publish. The kernel drops it however the holder ends, SIGKILL included; the
  holder writes who it is into the file and empties it on a clean exit, so a
  later run that finds a line there from a process that is gone says that run
  was killed. A second run while the lock is held is refused at once, naming
  the holder. Where the filesystem has no ``flock`` the lock is a file created
  with ``O_EXCL`` holding the same line, broken when its holder (same host) is
  gone.
- **Only its own files.** ``<out>/.nemotron-data-prep.json`` (the manifest)
  lists every file the data prep wrote there. Before any work starts, a file in
  the way (one with a name the data prep writes, or the shape of one, that the
  manifest does not list) is an error; at the end only files the manifest
  lists are ever deleted. The names a run may write are added to the manifest
  *before* it writes them, so a killed run never leaves a file of its own that
  the next run would take for a stranger's.
- **Published is immutable.** Before it publishes, the run records the
  artifact name and its content key in the manifest. A later run into that
  directory with another key is refused; with the same key (same config, same
  inputs, so the same bytes) it writes nothing and publishes the recorded
  result again.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nemo_runspec.errors import ConfigError, ExecutionError

from .report import TMP_RE, write_json

MANIFEST = ".nemotron-data-prep.json"
LOCK = ".nemotron-data-prep.lock"
DONE_DIR = ".done"

_SHARD = r"shard_\d{5}"
#: Per kind: what it writes, as regexes over the path relative to the output dir.
_PER_SHARD = {
    "pretrain": (r"(train|valid|test)/{shard}\.(bin|idx)",),
    "sft": (r"(train|valid|test)/{shard}\.parquet",),
    "rl": (r"shards/{shard}\.jsonl",),
}
_FIXED = {
    "pretrain": ("blend.json",),
    "sft": ("packed/train.npy", "packed/validation.npy", "packed/test.npy", "packed/packing_metadata.json"),
    "rl": ("train.jsonl", "validation.jsonl"),
}
_COMMON_FIXED = ("metadata.json", "report.json")
#: Directories a kind writes into (besides the output dir itself).
_DIRS = {
    "pretrain": ("train", "valid", "test", DONE_DIR),
    "sft": ("train", "valid", "test", "packed", DONE_DIR),
    "rl": ("shards", DONE_DIR),
}


def owned_pattern(kind: str) -> re.Pattern[str]:
    """Every relative path ``kind`` may write (shards of any index, fixed files, done-markers)."""
    parts = [p.format(shard=_SHARD) for p in _PER_SHARD[kind]]
    parts += [re.escape(f) for f in (*_FIXED[kind], *_COMMON_FIXED)]
    parts.append(re.escape(DONE_DIR) + "/" + _SHARD + r"\.json")
    return re.compile("(?:" + "|".join(parts) + ")")


def candidates(kind: str, shard_names: Iterable[str]) -> set[str]:
    """The relative paths a run of ``kind`` over these shards may write."""
    splits = {"pretrain": (("train", "valid", "test"), (".bin", ".idx")),
              "sft": (("train", "valid", "test"), (".parquet",)), "rl": (("shards",), (".jsonl",))}[kind]
    out = set(_FIXED[kind]) | set(_COMMON_FIXED)
    for name in shard_names:
        out.add(f"{DONE_DIR}/{name}.json")
        out |= {f"{d}/{name}{ext}" for d in splits[0] for ext in splits[1]}
    return out


# ── the lock ────────────────────────────────────────────────────────────────


def _holder_line() -> str:
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": since})


def describe_holder(text: str | None) -> str:
    """``pid 123 on host, since 2025-01-01T10:00:00`` from a lock file's line."""
    try:
        data = json.loads(text or "")
        return f"pid {data['pid']} on {data['host']}, since {data['since']}"
    except (ValueError, KeyError, TypeError):
        return (text or "").strip() or "a process that did not say who it is"


def holder_gone(text: str | None) -> bool:
    """True when the line names a process on this host that no longer runs."""
    from nemo_runspec.stale import pid_alive

    try:
        data = json.loads(text or "")
        return data["host"] == socket.gethostname() and not pid_alive(int(data["pid"]))
    except (ValueError, KeyError, TypeError):
        return False


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


class OutputLock:
    """The one-writer lock of an output directory (see the module docstring).

    :meth:`acquire` raises :class:`~nemo_runspec.errors.ExecutionError` naming
    the holder if another run holds it, and returns the holder line a killed
    previous run left behind (None if the last holder exited cleanly).
    """

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.path = out_dir / LOCK
        self._flock: Any = None
        self._lease = False

    def _busy(self, holder: str | None) -> ExecutionError:
        return ExecutionError(f"another data prep is writing this directory: {describe_holder(holder)}",
                              path=self.out_dir, key="output_dir",
                              hint="wait for it to finish, or choose another output_dir")

    def acquire(self) -> str | None:
        """Take the lock at once or fail; return what a killed previous holder left, if anything."""
        from nemo_runspec.artifacts.locking import FlockLock
        from nemo_runspec.exceptions import ArtifactError

        before = _read(self.path)
        lock = FlockLock(str(self.path), timeout=0)
        try:
            supported = lock.acquire()
        except ArtifactError:
            raise self._busy(_read(self.path)) from None
        if not supported:
            return self._acquire_lease()
        self._flock = lock
        self.path.write_text(_holder_line(), encoding="utf-8")
        return before if before and holder_gone(before) else None

    def _acquire_lease(self) -> str | None:
        """Without ``flock``: the lock file itself, created with ``O_EXCL``."""
        from nemo_runspec.artifacts.locking import create_local_exclusive

        left = None
        for _ in range(2):
            try:
                create_local_exclusive(str(self.path), _holder_line().encode())
                self._lease = True
                return left
            except FileExistsError:
                holder = _read(self.path)
                if not holder_gone(holder):
                    raise self._busy(holder) from None
                left = holder
                self.path.unlink(missing_ok=True)
        raise self._busy(_read(self.path))

    def release(self) -> None:
        """Mark a clean exit (empty the file, or remove the lease) and drop the lock."""
        if self._lease:
            self.path.unlink(missing_ok=True)
            self._lease = False
        if self._flock is not None:
            try:
                self.path.write_text("", encoding="utf-8")
            except OSError:
                pass
            self._flock.release()
            self._flock = None


# ── the manifest ────────────────────────────────────────────────────────────


@dataclass
class Manifest:
    """``<out>/.nemotron-data-prep.json``: what the data prep wrote there, and what it published."""

    kind: str
    files: set[str] = field(default_factory=set)
    key: str = ""
    complete: bool = False
    published: list[str] = field(default_factory=list)
    summary: dict[str, Any] | None = None

    @classmethod
    def load(cls, out_dir: Path, kind: str) -> Manifest | None:
        """The manifest of ``out_dir`` (None if there is none); a corrupt one is a one-line error."""
        path = out_dir / MANIFEST
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the data-prep manifest: {exc}", path=path, key="output_dir",
                              hint="delete the output dir, or choose another output_dir") from None
        try:
            data = json.loads(text)
            files = data["files"]
            if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
                raise TypeError("files is not a list of names")
            man = cls(kind=str(data["kind"]), files=set(files), key=str(data.get("key", "")),
                      complete=bool(data.get("complete")), published=list(data.get("published") or []),
                      summary=data.get("summary"))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"corrupt data-prep manifest ({exc})", path=path, key="output_dir",
                              hint="it lists what the data prep wrote; delete the output dir and rerun") from None
        if man.kind != kind:
            raise ConfigError(f"this directory holds {man.kind} data-prep output, not {kind}", path=out_dir,
                              key="output_dir", hint="choose another output_dir")
        return man

    def save(self, out_dir: Path) -> None:
        """Write the manifest (atomically)."""
        write_json(out_dir / MANIFEST, {"kind": self.kind, "files": sorted(self.files), "key": self.key,
                                        "complete": self.complete, "published": self.published,
                                        "summary": self.summary})


def in_the_way(out_dir: Path, kind: str, manifest: Manifest | None) -> list[str]:
    """Paths (relative) the data prep would write or that look like its output, but that it did not write."""
    owned = owned_pattern(kind)
    mine = manifest.files if manifest else set()
    found: list[str] = []
    for d in ("", *_DIRS[kind]):
        base = out_dir / d if d else out_dir
        if d and (base.exists() or base.is_symlink()) and not base.is_dir():
            found.append(d)
            continue
        try:
            entries = sorted(base.iterdir())
        except FileNotFoundError:
            continue
        for p in entries:
            rel = p.relative_to(out_dir).as_posix()
            if owned.fullmatch(rel) and (rel not in mine or not p.is_file()):
                found.append(rel)
    return found


def sweep_tmp(out_dir: Path, kind: str) -> list[str]:
    """Remove temporary files of ours (``.<name>.<pid>-<hex>.tmp``) whose writer is gone."""
    from nemo_runspec.stale import pid_alive

    owned = owned_pattern(kind)
    removed = []
    for d in ("", *_DIRS[kind]):
        base = out_dir / d if d else out_dir
        try:
            entries = list(base.iterdir())
        except (FileNotFoundError, NotADirectoryError):
            continue
        for p in entries:
            m = TMP_RE.match(p.name)
            if not m or not p.is_file():
                continue
            final = (Path(d) / m.group("name")).as_posix() if d else m.group("name")
            if (owned.fullmatch(final) or final == MANIFEST) and not pid_alive(int(m.group("pid"))):
                p.unlink(missing_ok=True)
                removed.append(p.relative_to(out_dir).as_posix())
    return sorted(removed)
