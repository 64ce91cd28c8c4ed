"""``executor = "slurm"``: the job packaged and submitted through nemo-run's SlurmExecutor
(:func:`nemo_runspec.slurm.prepare_job`, :func:`nemo_runspec.slurm.submit`); its dry run is
the exact sbatch script, and the squash script when the image is imported first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from nemo_runspec.backends.base import DryRun

if TYPE_CHECKING:
    from nemo_runspec.job.compiled import CompiledJob
    from nemo_runspec.slurm.prepared import PreparedJob


class SlurmBackend:
    """Slurm through nemo-run: afterok chains, job arrays for sweeps, image imports first."""

    name: ClassVar[str] = "slurm"
    chains: ClassVar[bool] = True
    waits_for_jobs: ClassVar[bool] = True
    sweeps: ClassVar[bool] = True

    def prepare(self, job: CompiledJob, *, dependencies: Sequence[str] = ()) -> PreparedJob:
        """The packaged code and the SlurmExecutor (torchrun, direct or our Ray template)."""
        from nemo_runspec.job.packager import packager_for
        from nemo_runspec.slurm.prepared import prepare_job

        return prepare_job(job, *packager_for(job), dependencies=list(dependencies) or None)

    def render(self, job: CompiledJob, prepared: PreparedJob) -> DryRun:
        """The sbatch script (and the squash script), rendered offline."""
        return slurm_dry_run(prepared)

    def submit(self, job: CompiledJob, prepared: PreparedJob) -> int:
        """Submit it (and follow it when attached); the exit code."""
        from nemo_runspec.slurm.submission import submit

        return submit(prepared).returncode


def slurm_dry_run(prepared: PreparedJob) -> DryRun:
    """The exact sbatch script of ``prepared`` (offline), and its squash script if any."""
    from nemo_runspec.slurm.render import render_sbatch

    scripts = {"sbatch script": render_sbatch(prepared)}
    if prepared.squash is not None:
        # submitted first when the .sqsh is missing (or --force-squash); the job
        # above then also gets --dependency=afterok:<its id>
        scripts[f"squash script (runs first unless {prepared.squash.path} exists)"] = prepared.squash.script
    return DryRun(scripts=scripts)
