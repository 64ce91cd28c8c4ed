"""``$NEMOTRON_HOME/sweeps/<sweep id>.json``: a sweep's points, its array jobs, what ran here.

One record per sweep id. The id is the recipe's slug and a hash of the command
line (:meth:`~nemo_runspec.config.sweep.SweepPlan.key`), so running the same
sweep again finds its record: the points that completed (an array task Slurm
says ``COMPLETED``, or a local run that exited 0) are skipped, the others
submitted again as a new array of the same record (docs/sweeps.md, "Resuming").
Every array is also a line of the submission ledger (its ``sweep`` field names
the record), so ``nemotron jobs`` finds it by its Slurm id too.

The record holds names, values and paths only; values that look like secrets
are redacted before anything is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nemo_runspec.errors import CLIUsageError

FORMAT = 1


def sweeps_dir() -> Path:
    """``$NEMOTRON_HOME/sweeps``."""
    from nemo_runspec.paths import nemotron_home

    return nemotron_home() / "sweeps"


@dataclass
class ArrayRecord:
    """One ``sbatch --array`` of a sweep: its Slurm id and which points it runs."""

    job_id: str
    indices: list[int]
    job_dir: str
    submitted_at: str
    #: the ledger line of the array (tunnel, profile, ... as ``Submission.to_json``)
    submission: dict[str, Any] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    sbatch_logs: dict[str, str] = field(default_factory=dict)


@dataclass
class SweepRecord:
    """What ``nemotron jobs`` and a rerun know of a sweep."""

    id: str
    created: str
    recipe: str | None
    profile: str | None
    env_file: str | None
    points: list[dict[str, Any]]
    arrays: list[ArrayRecord] = field(default_factory=list)
    #: points run here: ``{index: {"exit_code", "job_dir", "log"}}``
    local: dict[str, dict[str, Any]] = field(default_factory=dict)
    path: Path | None = None

    def label(self, index: int) -> str:
        """The point's swept values, ``a=1 b=2``."""
        values = self.points[index].get("values") or {}
        return " ".join(f"-c {v}" if k == "config" else f"{k}={v}" for k, v in values.items())

    def latest(self, index: int) -> ArrayRecord | None:
        """The newest array that ran point ``index``."""
        for array in reversed(self.arrays):
            if index in array.indices:
                return array
        return None

    def to_json(self) -> dict[str, Any]:
        """The record as written."""
        return {"v": FORMAT, "id": self.id, "created": self.created, "recipe": self.recipe,
                "profile": self.profile, "env_file": self.env_file, "points": self.points,
                "arrays": [vars(a) for a in self.arrays], "local": self.local}

    @classmethod
    def from_json(cls, data: object, path: Path | None = None) -> SweepRecord:
        """A record read back; ``ValueError`` when it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("id"), str) or not isinstance(data.get("points"), list):
            raise ValueError("not a sweep record")
        arrays = [ArrayRecord(job_id=str(a["job_id"]), indices=[int(i) for i in a["indices"]],
                              job_dir=str(a.get("job_dir") or ""), submitted_at=str(a.get("submitted_at") or ""),
                              submission=dict(a.get("submission") or {}), logs=dict(a.get("logs") or {}),
                              sbatch_logs=dict(a.get("sbatch_logs") or {}))
                  for a in data.get("arrays") or []]
        return cls(id=data["id"], created=str(data.get("created") or ""), recipe=data.get("recipe"),
                   profile=data.get("profile"), env_file=data.get("env_file"), points=list(data["points"]),
                   arrays=arrays, local=dict(data.get("local") or {}), path=path)


def now() -> str:
    """UTC, ``YYYY-MM-DDTHH:MM:SSZ`` (as the ledger writes it)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def record_path(sweep_id: str) -> Path:
    """Where the record of ``sweep_id`` lives."""
    return sweeps_dir() / f"{sweep_id}.json"


def load(sweep_id: str) -> SweepRecord | None:
    """The record of ``sweep_id``, or None (none, or unreadable)."""
    if not sweep_id or "/" in sweep_id or sweep_id.startswith("."):
        return None
    path = record_path(sweep_id)
    try:
        return SweepRecord.from_json(json.loads(path.read_text(encoding="utf-8")), path)
    except (OSError, ValueError, TypeError, KeyError):
        return None


def load_all() -> list[SweepRecord]:
    """Every readable record, oldest first."""
    root = sweeps_dir()
    if not root.is_dir():
        return []
    found = [r for f in sorted(root.glob("*.json")) if not f.name.startswith(".") if (r := load(f.stem))]
    return sorted(found, key=lambda r: r.created)


@contextlib.contextmanager
def updating(sweep_id: str, fresh: SweepRecord) -> Iterator[SweepRecord]:
    """The record of ``sweep_id`` (``fresh`` when there is none) under an exclusive lock;
    written back atomically when the block ends without an exception."""
    import fcntl

    from nemo_runspec.config.jobdir import atomic_write_text
    from nemo_runspec.paths import ensure_dir, path_error

    root = ensure_dir(sweeps_dir(), action="record the sweep")
    lock_path = root / f".{sweep_id}.lock"
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise path_error(exc, lock_path, "record the sweep") from exc
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        current = load(sweep_id) or fresh
        yield current
        try:
            atomic_write_text(record_path(sweep_id), json.dumps(current.to_json(), indent=1) + "\n")
        except OSError as exc:
            raise path_error(exc, record_path(sweep_id), "record the sweep") from exc
    finally:
        os.close(fd)


def resolve(ref: str, records: list[SweepRecord] | None = None) -> tuple[SweepRecord, int | None] | None:
    """The sweep (and point) ``ref`` names, or None when it names none: ``SWEEP``,
    ``SWEEP:N``, an array's Slurm id (``168``), ``168:N`` or Slurm's ``168_N``.

    ``SWEEP:N`` for a point the sweep does not have is a one-line error.
    """
    ref = ref.strip()
    base, sep, tail = ref.rpartition(":") if ":" in ref else (ref, "", "")
    if not sep:
        base, under, tail = ref.partition("_")
        if not (under and base.isdigit() and tail.isdigit()):
            base, tail = ref, ""
    records = load_all() if records is None else records
    for rec in reversed(records):
        if base == rec.id or any(a.job_id == base for a in rec.arrays):
            if not tail:
                return rec, None
            if not tail.isdigit() or int(tail) >= len(rec.points):
                raise CLIUsageError(f"sweep {rec.id} has no point {tail!r}",
                                    hint=f"its points are 0..{len(rec.points) - 1}")
            return rec, int(tail)
    return None
