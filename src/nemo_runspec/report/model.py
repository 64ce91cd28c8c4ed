"""What a report holds: plain dataclasses, the same for the HTML page and ``--format json``.

A :class:`Report` is a job, a pipe or a sweep, and every one of them is a list of
:class:`Member` s: one member for a job, one per stage for a pipe (with the
stages it depends on), one per point for a sweep (with the overrides that make
the point). Each member holds a :class:`JobReport`: what the launcher recorded of
one job (its identity, attempts, timeline, metric series and files).

Times are Unix seconds (floats, UTC); steps are training steps (1-based, as the
logs print them). Nothing here imports more than the standard library.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

#: metric names (the keys the fallback trainer logs to W&B, docs/training.md)
TRAIN_LOSS, EVAL_LOSS, TOKENS_PER_SEC, LEARNING_RATE = (
    "train/loss", "eval/loss", "train/tokens_per_sec", "train/lr")
#: kinds of report
JOB, PIPE, SWEEP = "job", "pipe", "sweep"


@dataclass
class Series:
    """One metric of one attempt: ``steps[i]`` -> ``values[i]`` (``times[i]`` when known).

    ``total`` is how many points the record held before the curve was thinned out
    for the page (:mod:`nemo_runspec.report.downsample`); equal to ``len(steps)``
    when nothing was left out.
    """

    metric: str
    attempt: int
    steps: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    times: list[float | None] = field(default_factory=list)
    source: str = ""
    total: int = 0

    def add(self, step: int, value: float, t: float | None = None) -> None:
        """Append one point (a non-finite value is kept out: it cannot be drawn)."""
        if not math.isfinite(value):
            return
        self.steps.append(step)
        self.values.append(value)
        self.times.append(t)
        self.total += 1

    @property
    def last(self) -> float | None:
        """The value at the highest step, None when empty."""
        return self.values[-1] if self.values else None


@dataclass
class Attempt:
    """One Slurm attempt of a job (one run of its batch script; the first is 0)."""

    number: int
    start: float | None = None
    end: float | None = None
    nodes: str = ""
    #: how it ended: ``completed``, ``timelimit``, ``preempted``, ``stall``, ... (resilience
    #: records), else Slurm's state for it (``REQUEUED``, ``COMPLETED``, ``FAILED``); empty while running
    kind: str = ""
    reason: str = ""
    requeued: bool = False
    #: the last step it checkpointed (resilience records), when known
    step: int | None = None


@dataclass
class Event:
    """A point on the timeline: ``submitted``, ``eligible``, ``started``, ``checkpoint``,
    ``resumed``, ``stopped``, ``requeued``, ``published``, ``ended``. ``t`` is None when
    only the step is known (a checkpoint in a log without times)."""

    kind: str
    t: float | None = None
    attempt: int | None = None
    step: int | None = None
    label: str = ""


@dataclass
class Setting:
    """One execution setting of ``run.env``, its value and where it came from."""

    key: str
    value: str
    source: str = ""


@dataclass
class ArtifactLink:
    """An artifact the job consumed (``key`` is the ``run.<key>`` that named it) or published."""

    ref: str
    key: str = ""
    path: str = ""


@dataclass
class Identity:
    """What the job was: command line, profile and its settings, image, packaged code, artifacts."""

    command: str = ""
    recipe: str = ""
    config: str = ""
    overrides: list[str] = field(default_factory=list)
    profile: str = ""
    env_file: str = ""
    settings: list[Setting] = field(default_factory=list)
    image: str = ""
    #: the packaged code: ``archive_sha256``, ``commit``, ``branch``, ``dirty``, ``fingerprint``, ``kind``
    code: dict[str, Any] = field(default_factory=dict)
    consumed: list[ArtifactLink] = field(default_factory=list)
    published: list[ArtifactLink] = field(default_factory=list)
    #: who submitted it, from where, when (``run.provenance``)
    provenance: dict[str, Any] = field(default_factory=dict)


@dataclass
class JobReport:
    """Everything recorded of one job (a Slurm job or a local run's job dir)."""

    id: str
    name: str = ""
    #: ``slurm`` or ``local``
    where: str = "slurm"
    state: str = "UNKNOWN"
    exit_code: int | None = None
    job_dir: str = ""
    submitted: float | None = None
    started: float | None = None
    ended: float | None = None
    identity: Identity = field(default_factory=Identity)
    attempts: list[Attempt] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    #: Nsight Systems reports (``.nsys-rep``) found in the job dir (docs/reports.md, "Profiling")
    profiles: list[str] = field(default_factory=list)
    #: the job's own last word on how it ended (the outcome line of its log), when it has one
    outcome: str = ""
    #: what could not be read, and why (shown on the page; never fatal)
    notes: list[str] = field(default_factory=list)

    def metric(self, name: str) -> list[Series]:
        """The series of ``name``, one per attempt, in attempt order."""
        return sorted((s for s in self.series if s.metric == name), key=lambda s: s.attempt)

    def final(self, name: str) -> float | None:
        """The metric's value at the highest step of any attempt (None when never logged)."""
        best: tuple[int, float] | None = None
        for s in self.metric(name):
            if s.steps and (best is None or s.steps[-1] >= best[0]):
                best = (s.steps[-1], s.values[-1])
        return best[1] if best else None

    @property
    def last_step(self) -> int | None:
        """The highest step any series reached."""
        steps = [s.steps[-1] for s in self.series if s.steps]
        return max(steps) if steps else None

    @property
    def seconds(self) -> float | None:
        """Wall time from the first start to the end (to now's last record while running)."""
        if self.started is None:
            return None
        end = self.ended
        if end is None:
            times = [e.t for e in self.events if e.t is not None]
            end = max(times) if times else None
        return None if end is None else max(0.0, end - self.started)


@dataclass
class Member:
    """A job of the report: the job itself, a pipe stage, or a sweep point."""

    label: str
    job: JobReport | None = None
    depends_on: list[str] = field(default_factory=list)
    #: a sweep point's overrides (those that differ between the points)
    overrides: dict[str, str] = field(default_factory=dict)
    #: why a pipe stage did not run (its output existed)
    skipped: str = ""


@dataclass
class Report:
    """A job, pipe or sweep report (``kind``), with one member per job."""

    kind: str
    id: str
    title: str
    generated: float
    members: list[Member] = field(default_factory=list)
    #: index in ``members`` of a sweep's best point (lowest final loss), None otherwise
    best: int | None = None
    #: the metric the best point was chosen by
    best_metric: str = ""

    @property
    def jobs(self) -> list[JobReport]:
        """The members' jobs (skipped stages have none)."""
        return [m.job for m in self.members if m.job is not None]

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON data (what ``nemotron report --format json`` prints)."""
        data = dataclasses.asdict(self)
        data["format"] = FORMAT
        return data


#: version of :meth:`Report.to_json`'s layout
FORMAT = 1


def final_loss(job: JobReport) -> tuple[str, float] | None:
    """``(metric, value)`` a sweep ranks points by: the last eval loss, else the last train loss."""
    for name in (EVAL_LOSS, TRAIN_LOSS):
        value = job.final(name)
        if value is not None:
            return name, value
    return None


def tokens_per_sec(job: JobReport) -> float | None:
    """Mean throughput over every logged window of every attempt (None when never logged)."""
    values = [v for s in job.metric(TOKENS_PER_SEC) for v in s.values]
    return sum(values) / len(values) if values else None
