"""Start a job prepared by :mod:`nemo_runspec.execution.backend_job` (see its docstring):
Docker through :mod:`nemo_runspec.execution.docker_job`, SkyPilot, DGX Cloud and Lepton
through a ``nemo_run.Experiment``; and :func:`run_job`, what recipe commands call for
these executors."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from nemo_runspec.execution.backend_job import (
    SEEN,
    TASK_SCRIPT,
    BackendJob,
    prepare,
    show,
    write_job_dir,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console

    from nemo_runspec.job.compiled import CompiledJob


def submit(prepared: BackendJob) -> int:
    """Start the job (see the module docstring); returns the exit code to exit with."""
    if prepared.kind == "docker":
        from nemo_runspec.execution.docker_job import submit_docker

        return submit_docker(prepared)
    return _submit_experiment(prepared)


def _submit_experiment(prepared: BackendJob) -> int:
    import nemo_run as run

    attached = prepared.mode != "batch"
    with run.Experiment(prepared.name, id=prepared.exp_id, base_dir=str(prepared.base_dir),
                        log_level="WARN") as exp:
        exp.add(run.Script(path=f"{SEEN}/{TASK_SCRIPT}", entrypoint="bash"), executor=prepared.executor,
                name=prepared.name)
        _fix_remote_job_dir(prepared)
        write_job_dir(prepared)
        exp.run(detach=not attached, tail_logs=attached)
        state = str(getattr(exp.jobs[0], "state", "")).rsplit(".", 1)[-1]
    print(f"{prepared.kind} job {prepared.name}: {state or 'submitted'}; job dir {prepared.job_dir}",
          file=sys.stderr)
    return 0 if not attached or state == "SUCCEEDED" else 1


def _fix_remote_job_dir(prepared: BackendJob) -> None:
    """DGX Cloud and Lepton place the job dir on their storage relative to nemo-run's home;
    ours is under ``$NEMOTRON_HOME/jobs``: the same relative layout under the remote dir."""
    rel = os.path.relpath(prepared.job_dir, prepared.base_dir)
    executor = prepared.executor
    if prepared.kind == "dgxcloud":
        executor.pvc_job_dir = os.path.join(executor.pvc_nemo_run_dir, rel)
    elif prepared.kind == "lepton":
        executor.lepton_job_dir = os.path.join(executor.nemo_run_dir, rel)


def run_job(job: CompiledJob, *, extra: Callable[[Console], object] | None = None) -> int:
    """Package, prepare and show or start ``job`` (the body recipe commands call for these executors).

    ``extra``: what the command's dry run prints after the job's script (the native backend's
    calls, the evaluation config), as on Slurm; called with the dry run's console."""
    from nemo_runspec.job.last_step import take
    from nemo_runspec.job.packager import packager_for

    if take("other", job):  # a sweep says it cannot run on this executor
        return 0
    prepared = prepare(job, *packager_for(job))
    return show(job, prepared, extra=extra) if job.dry_run else submit(prepared)
