"""Render the exact sbatch script of a :class:`PreparedJob`, offline.

The same nemo-run Experiment and task build both the dry run and the real
submission (:mod:`nemo_runspec.slurm.submission`), so the preview cannot drift.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from nemo_runspec.errors import ExecutionError
from nemo_runspec.secrets import searchable
from nemo_runspec.slurm.prepared import PreparedJob
from nemo_runspec.stale import sweep


def task_for(job: PreparedJob) -> Any:
    """The nemo-run task: a ``run.Script``, or a Ray driver script for ``launch = "ray"``."""
    import nemo_run as run

    if job.is_ray:
        from nemo_runspec.execution.ray import ray_script

        return ray_script(job.script, job.args, entrypoint=job.entrypoint)

    return run.Script(path=job.script, args=list(job.args), entrypoint=job.entrypoint)


def experiment_for(job: PreparedJob, base_dir: Path) -> Any:
    """The nemo-run Experiment that holds ``job`` under ``base_dir``."""
    from nemo_runspec.run import experiment_class

    return experiment_class()(
        job.title, id=job.exp_id, base_dir=str(base_dir), clean_mode=True,
        enable_goodbye_message=False, skip_status_at_exit=True, log_level="ERROR",
    )


def render_sbatch(job: PreparedJob) -> str:
    """The exact sbatch script :func:`submit` would write, rendered offline.

    Runs nemo-run's own dry run in a temporary Experiment dir with a no-op packager
    (the packager never changes the script text), then deletes it: no SSH, no
    squeue, nothing left behind. Secrets appear only as the secrets-file path.
    """
    import nemo_run as run

    from nemo_runspec.run import quiet_nemo_run

    executor = job.executor.clone()
    if not getattr(executor.packager, "symlink_from_remote_dir", None):
        executor.packager = run.Packager()
    # nemo-run's dry run writes the script into an Experiment dir; it lives in the
    # system temp dir for the length of this call. A render killed before its
    # `finally` leaves it behind, so each render first removes those whose pid is gone.
    sweep(Path(tempfile.gettempdir()).glob("nemotron-dryrun-*"))
    tmp = Path(tempfile.mkdtemp(prefix=f"nemotron-dryrun-{os.getpid()}-"))
    try:
        with quiet_nemo_run():
            exp = experiment_for(job, tmp)
            with exp:
                exp.add(task_for(job), executor=executor, name=job.name)
                exp.dryrun(log=False, delete_exp_dir=False)
                exp._launched = False
        path = tmp / "experiments" / job.title / job.exp_id / f"{job.name}_sbatch.sh"
        text = path.read_text()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _assert_no_secret_values(text, job)
    return text


def _assert_no_secret_values(text: str, job: PreparedJob) -> None:
    for name, value in job.secrets.items():
        if searchable([value]) and str(value) in text:
            raise ExecutionError(f"secret {name} would appear in the sbatch script; refusing")


# --------------------------------------------------------------------------- remote access
