"""Render the exact sbatch script of a :class:`PreparedJob`, offline.

The same nemo-run steps build both the dry run and the real submission
(:class:`~nemo_runspec.slurm.launch.SlurmLaunch`, used by
:mod:`nemo_runspec.slurm.submission`), so the preview cannot drift.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nemo_runspec._nemo_run import lean
from nemo_runspec.errors import ExecutionError
from nemo_runspec.runtime.stale import sweep
from nemo_runspec.secrets import searchable
from nemo_runspec.slurm.prepared import PreparedJob

if TYPE_CHECKING:
    from nemo_run.core.execution.slurm import SlurmExecutor

    from nemo_runspec.slurm.launch import SlurmLaunch


def task_for(job: PreparedJob) -> Any:
    """The nemo-run task: a ``Script``, or a Ray driver script for ``launch = "ray"``."""
    if job.is_ray:
        from nemo_runspec.execution.ray import ray_script

        return ray_script(job.script, job.args, entrypoint=job.entrypoint)
    lean()
    from nemo_run.config import Script

    if getattr(job.executor, "launcher", None) is None:
        # nemo-run joins a direct task's words into the srun line as they are (its torchrun
        # component quotes its own): each is quoted here, so an argument with a space or a
        # `$(...)` reaches the script whole and never runs in the batch shell
        return Script(path=_quoted(job.script), args=[_quoted(a) for a in job.args], entrypoint=job.entrypoint)
    return Script(path=job.script, args=list(job.args), entrypoint=job.entrypoint)


def _quoted(word: str) -> str:
    """``word`` shell-quoted, unless it is marked to reach the shell as it is (torchx's
    ``_noquote``: a sweep's ``$SLURM_ARRAY_TASK_ID`` path, nemo_runspec.sweep.array)."""
    import shlex

    from torchx.components.dist import _noquote

    return word if isinstance(word, _noquote) else shlex.quote(word)


def launch_for(job: PreparedJob, base_dir: str | os.PathLike[str],
               executor: SlurmExecutor | None = None) -> SlurmLaunch:
    """The :class:`~nemo_runspec.slurm.launch.SlurmLaunch` of ``job`` under ``base_dir``
    (its experiment: ``<base_dir>/experiments/<title>/<exp_id>``)."""
    from nemo_runspec.slurm.launch import SlurmLaunch

    return SlurmLaunch(title=job.title, exp_id=job.exp_id, base_dir=base_dir, name=job.name,
                       task=task_for(job), executor=job.executor if executor is None else executor)


def render_sbatch(job: PreparedJob) -> str:
    """The exact sbatch script :func:`submit` would write, rendered offline.

    Runs nemo-run's dry run steps (:meth:`SlurmLaunch.dryrun`) in a temporary
    Experiment dir with a no-op packager (the packager never changes the script
    text), then deletes it: no SSH, no squeue, nothing left behind. Secrets
    appear only as the secrets-file path.
    """
    lean()
    from nemo_run.core.packaging.base import Packager

    from nemo_runspec.job.run_config import quiet_nemo_run

    executor = job.executor.clone()
    if not getattr(executor.packager, "symlink_from_remote_dir", None):
        executor.packager = Packager()
    # nemo-run's dry run writes the script into an Experiment dir; it lives in the
    # system temp dir for the length of this call. A render killed before its
    # `finally` leaves it behind, so each render first removes those whose pid is gone.
    sweep(Path(tempfile.gettempdir()).glob("nemotron-dryrun-*"))
    tmp = Path(tempfile.mkdtemp(prefix=f"nemotron-dryrun-{os.getpid()}-"))
    try:
        with quiet_nemo_run():
            path = launch_for(job, tmp, executor).dryrun()
        text = Path(path).read_text()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _assert_no_secret_values(text, job)
    return text


def _assert_no_secret_values(text: str, job: PreparedJob) -> None:
    for name, value in job.secrets.items():
        if searchable([value]) and str(value) in text:
            raise ExecutionError(f"secret {name} would appear in the sbatch script; refusing")


# --------------------------------------------------------------------------- remote access
