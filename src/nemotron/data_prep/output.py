"""What a data prep may do in its output directory: one writer at a time, and only its own files.

- **One writer.** ``<out>/.nemotron-data-prep.lock`` exists from the plan to the
  publish and names its holder (host, pid, start time:
  :class:`nemo_runspec.runtime.locks.HolderLock`). A second run while the holder runs is
  refused at once, naming it; a holder on another host is named with how to
  clear its lock; a holder on this host that is gone (killed: its pid gone, or
  reused by another process) has its lock taken over, and the run says that the
  previous one was killed. (A kernel ``flock`` is not used: a worker forked while
  it is held keeps it after its parent is killed.)
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
import re
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


def describe_holder(text: str | None) -> str:
    """``pid 123 on host, since 2025-01-01T10:00:00`` from a lock file's line."""
    from nemo_runspec.runtime.locks import Holder

    holder = Holder.parse(text)
    return holder.describe() if holder else (text or "").strip() or "a process that did not say who it is"


class OutputLock:
    """The one-writer lock of an output directory (see the module docstring).

    :meth:`acquire` raises :class:`~nemo_runspec.errors.ExecutionError` naming
    the holder if another run holds it (on another host: how to clear it), and
    returns the holder line of a killed previous run it took over (None if the
    lock was free).
    """

    def __init__(self, out_dir: Path) -> None:
        from nemo_runspec.runtime.locks import HolderLock

        self.out_dir = out_dir
        self.path = out_dir / LOCK
        self._lock = HolderLock(self.path)

    def _busy(self, busy: Any) -> ExecutionError:
        from nemo_runspec.runtime.locks import elsewhere_hint

        holder = busy.holder
        hint = (elsewhere_hint(holder, self.path) if holder is not None and not holder.here
                else "wait for it to finish, or choose another output_dir")
        return ExecutionError(f"another data prep is writing this directory: {busy}",
                              path=self.out_dir, key="output_dir", hint=hint)

    def acquire(self) -> str | None:
        """Take the lock at once or fail; return the line of a killed previous holder taken over."""
        from nemo_runspec.runtime.locks import Busy

        try:
            gone = self._lock.try_acquire()
        except Busy as busy:
            raise self._busy(busy) from None
        return gone.line() if gone is not None else None

    def release(self) -> None:
        """Remove the lock (a clean exit)."""
        self._lock.release()


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
    from nemo_runspec.runtime.stale import pid_alive

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
