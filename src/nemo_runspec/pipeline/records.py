"""What a pipeline is made of and leaves behind: each compiled stage's plan
(:class:`StagePlan`), what was submitted (:class:`PipeSubmission`), its record file
``$NEMOTRON_HOME/pipes/<id>.json`` (:func:`write_record`, :func:`load_record`) and the one
JSON line ``pipe --batch`` prints (:func:`chain_record`). :mod:`nemo_runspec.pipeline.chain`
compiles and launches pipelines with them (and re-exports these names)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nemo_runspec.errors import CLIUsageError
from nemo_runspec.pipeline.step import Preparation, Step

if TYPE_CHECKING:
    from nemo_runspec.job.compiled import CompiledJob
    from nemo_runspec.slurm.prepared import SubmittedJob


@dataclass(frozen=True)
class StagePlan:
    """One compiled stage of a pipeline.

    Attributes:
        step: the stage's description.
        job: its compiled job.
        consumes: ``{key: artifact ref}`` it reads when it starts.
        publishes: the artifact name it publishes, if any.
        depends_on: the stages of this pipeline that publish what it consumes.
        key: its pipe key: its config and its inputs (an input made by a pipe stage
            counts as that stage's key, selected or not; any other as its exact version).
        skip: the output for this key exists already; the stage is not run.
        reason: why it runs or is skipped, for the plan display.
        preparation: what the step's ``prepare`` hook made of it (``job`` is its job);
            ``None`` for a step without one.
        pins: ``{artifact name: pin}`` of its inputs (:mod:`nemo_runspec.artifacts.pins`):
            this pipe's producing stage, or the exact version there was when the pipe started.
        output: the exact version of its output a skipped stage stands on (``name:vN``).
    """

    step: Step
    job: CompiledJob
    consumes: Mapping[str, str]
    publishes: str | None
    depends_on: tuple[str, ...]
    key: str
    skip: bool
    reason: str
    preparation: Preparation | None = None
    pins: Mapping[str, str] = field(default_factory=dict)
    output: str | None = None

    @property
    def name(self) -> str:
        """The stage's name (its step's)."""
        return self.step.name


@dataclass
class PipeSubmission:
    """What :func:`submit_slurm` submitted: the pipe id, and each stage's job (skipped stages absent)."""

    pipe_id: str
    plans: list[StagePlan]
    jobs: dict[str, SubmittedJob] = field(default_factory=dict)
    record_path: Path | None = None

    @property
    def job_ids(self) -> dict[str, str]:
        """``stage -> Slurm job id`` of the stages submitted."""
        return {name: sub.job_id for name, sub in self.jobs.items()}


def pipes_dir() -> Path:
    """``$NEMOTRON_HOME/pipes``."""
    from nemo_runspec.paths import nemotron_home

    return nemotron_home() / "pipes"


def write_record(sub: PipeSubmission, *, launcher: str = "nemo-run", run_dir: str | None = None,
                 driver_log: str | None = None) -> Path:
    """Write ``$NEMOTRON_HOME/pipes/<id>.json`` atomically (no secrets: ids, names, paths).

    ``launcher`` is ``nemo-run`` (a job per stage) or ``sbatch`` (one allocation, whose
    ``run_dir`` holds each stage's ``.rc`` file and whose own log is ``driver_log``)."""
    from nemo_runspec.artifacts.pins import for_pipe

    first = sub.plans[0].job if sub.plans else None
    record = {
        "id": sub.pipe_id,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "launcher": launcher,
        **({"run_dir": run_dir, "driver_log": driver_log} if launcher == "sbatch" else {}),
        "profile": getattr(getattr(first, "profile", None), "name", None),
        "env_file": str(first.env_file.path) if first is not None and first.env_file is not None else None,
        "stages": [{
            "name": p.name, "recipe": p.job.runspec.name,
            "job_id": sub.jobs[p.name].job_id if p.name in sub.jobs else None,
            "job_dir": sub.jobs[p.name].job_dir if p.name in sub.jobs else None,
            "log": sub.jobs[p.name].log_path if p.name in sub.jobs else None,
            "depends_on": list(p.depends_on), "publishes": p.publishes, "skipped": p.skip, "reason": p.reason,
            "pins": for_pipe(p.pins, sub.pipe_id),
        } for p in sub.plans],
    }
    path = pipes_dir() / f"{sub.pipe_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp, path)
    return path


def load_record(pipe_id: str) -> dict[str, Any]:
    """The record of pipe ``pipe_id`` (one-line error naming close ids when absent)."""
    from nemo_runspec._suggest import did_you_mean

    path = pipes_dir() / f"{pipe_id}.json"
    if not path.is_file():
        known = sorted(p.stem for p in pipes_dir().glob("*.json"))
        raise CLIUsageError(f"no pipe {pipe_id!r} in {pipes_dir()}",
                            hint=did_you_mean(pipe_id, known) or "nemotron jobs list shows recent pipes")
    return json.loads(path.read_text())


def chain_record(sub: PipeSubmission) -> dict[str, Any]:
    """The one JSON line ``pipe --batch`` prints on stdout: the pipe id, how to follow,
    check and cancel the whole chain, and each stage's job (``job_id`` null when the
    stage was skipped: its output exists already; ``pipe_id`` and the commands are null
    when every stage was)."""
    from nemo_runspec.slurm.summary import submission_record

    stages = []
    for p in sub.plans:
        job = sub.jobs.get(p.name)
        stages.append({"stage": p.name, **(submission_record(job) if job is not None else
                                           {"job_id": None, "skipped": p.reason})})
    pid = sub.pipe_id or None  # none: every stage was skipped, nothing was submitted
    return {"pipe_id": pid, "follow": pid and f"nemotron jobs logs -f {pid}",
            "status": pid and f"nemotron jobs status {pid}", "cancel": pid and f"nemotron jobs cancel {pid}",
            "record": str(sub.record_path) if sub.record_path else None, "stages": stages}
