"""Start a job prepared by :mod:`nemo_runspec.execution.backend_job` (see its docstring)
through a ``nemo_run.Experiment`` (SkyPilot, DGX Cloud, Lepton; Docker has its own,
:mod:`nemo_runspec.execution.docker_job`); and :func:`run_job`, what recipe commands call for
these executors."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from nemo_runspec.execution.backend_job import SEEN, TASK_SCRIPT, BackendJob, write_job_dir

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console

    from nemo_runspec.job.compiled import CompiledJob


def submit_experiment(prepared: BackendJob) -> int:
    """Write the job dir and start the job in a nemo-run Experiment (detached with
    ``--batch``); returns the exit code to exit with."""
    import nemo_run as run

    from nemo_runspec.execution.backends import platform

    attached = prepared.mode != "batch"
    with run.Experiment(prepared.name, id=prepared.exp_id, base_dir=str(prepared.base_dir),
                        log_level="WARN") as exp:
        exp.add(run.Script(path=f"{SEEN}/{TASK_SCRIPT}", entrypoint="bash"), executor=prepared.executor,
                name=prepared.name)
        # a platform that copies the job dir onto its own storage places it relative to nemo-run's
        # home there; ours is under $NEMOTRON_HOME/jobs: the same relative layout under the remote dir
        platform(prepared.kind).place_job_dir(prepared.executor, os.path.relpath(prepared.job_dir,
                                                                                 prepared.base_dir))
        write_job_dir(prepared)
        exp.run(detach=not attached, tail_logs=attached)
        state = str(getattr(exp.jobs[0], "state", "")).rsplit(".", 1)[-1]
    print(f"{prepared.kind} job {prepared.name}: {state or 'submitted'}; job dir {prepared.job_dir}",
          file=sys.stderr)
    return 0 if not attached or state == "SUCCEEDED" else 1


def run_job(job: CompiledJob, *, extra: Callable[[Console], object] | None = None) -> int:
    """Package, prepare and show or start ``job`` (the body recipe commands call for these executors).

    ``extra``: what the command's dry run prints after the job's script (the native backend's
    calls, the evaluation config), as on Slurm; called with the dry run's console."""
    from nemo_runspec.env.registry import backend_class
    from nemo_runspec.execution.backend_job import show
    from nemo_runspec.job.last_step import take

    if take("other", job):  # a sweep says it cannot run on this executor
        return 0
    backend = backend_class(job.executor)()
    prepared = backend.prepare(job)
    return show(job, prepared, extra=extra) if job.dry_run else backend.submit(job, prepared)
