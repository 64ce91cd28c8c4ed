"""``executor = "slurm"``: the job packaged and submitted through nemo-run's SlurmExecutor
(:func:`nemo_runspec.slurm.prepare_job`, :func:`nemo_runspec.slurm.submit`); its dry run is
the exact sbatch script, and the squash script when the image is imported first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from nemo_runspec.backends.base import DryRun
from nemo_runspec.env.keys import KeyProblem, ProfileKeys

if TYPE_CHECKING:
    from nemo_runspec.job.compiled import CompiledJob
    from nemo_runspec.slurm.prepared import PreparedJob


#: the shared profile model's keys that Slurm reads and not every executor does
_READS = (
    "account", "partition", "run_partition", "batch_partition", "ntasks_per_node", "cpus_per_task",
    "mem", "time", "exclusive", "qos", "constraint", "exclude", "gres", "sbatch_options", "srun_args",
    "resilience", "profiling", "job_name_prefix", "dependency_type", "tunnel", "host", "user", "port", "identity",
    "remote_job_dir", "squash_dir", "ray_port_base", "ray_timeout", "max_array_size", "retries",
)


def _job_dir_problem(values: Mapping[str, Any]) -> KeyProblem | None:
    """``job_dir``, when it is the cluster's job dir (the local tunnel, or SSH without
    ``remote_job_dir``), is a path the batch script can carry."""
    job_dir = values.get("job_dir")
    if not (isinstance(job_dir, str) and job_dir and (
            (values.get("tunnel") or "local") == "local" or not values.get("remote_job_dir"))):
        return None
    from nemo_runspec.errors import LocalPathError
    from nemo_runspec.script_values import check_cluster_dir

    try:
        check_cluster_dir(job_dir, from_profile=True)
    except LocalPathError as exc:
        return KeyProblem("job_dir", exc.problem, exc.hint)
    return None


class SlurmBackend:
    """Slurm through nemo-run: afterok chains, job arrays for sweeps, image imports first."""

    name: ClassVar[str] = "slurm"
    chains: ClassVar[bool] = True
    waits_for_jobs: ClassVar[bool] = True
    sweeps: ClassVar[bool] = True
    composes: ClassVar[bool] = True
    runs_here: ClassVar[bool] = False
    bare_metal: ClassVar[bool] = True
    nemo_run_executor: ClassVar[str | None] = "nemo_run.core.execution.slurm:SlurmExecutor"
    #: its keys are typed by the shared profile model (they hold values pasted into the batch
    #: script, checked there for every profile); lenient: a profile without ``executor``
    #: runs here and may hold them
    profile: ClassVar[ProfileKeys] = ProfileKeys(reads=_READS, lenient=True, value_problem=_job_dir_problem)

    @classmethod
    def shares_filesystem(cls, values: Mapping[str, Any]) -> bool:
        """A cluster this machine is a login node of (``tunnel = "local"``) sees its filesystem."""
        return values.get("tunnel") != "ssh"

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
