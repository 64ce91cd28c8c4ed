"""``executor = "local"`` (and no profile): the job runs on this machine, in the foreground
(:func:`nemo_runspec.execution.local.run_local`); its dry run shows the command line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from nemo_runspec.backends.base import DryRun
from nemo_runspec.env.keys import ProfileKeys

if TYPE_CHECKING:
    from nemo_runspec.job.compiled import CompiledJob


class LocalBackend:
    """This machine: nothing to prepare; a run is the script's own process tree."""

    name: ClassVar[str] = "local"
    chains: ClassVar[bool] = True
    waits_for_jobs: ClassVar[bool] = False
    sweeps: ClassVar[bool] = True
    composes: ClassVar[bool] = True
    runs_here: ClassVar[bool] = True
    bare_metal: ClassVar[bool] = False
    nemo_run_executor: ClassVar[str | None] = "nemo_run.core.execution.local:LocalExecutor"
    #: its own keys are typed by the shared profile model; a profile without ``executor`` runs
    #: here and may hold Slurm keys (lenient)
    profile: ClassVar[ProfileKeys] = ProfileKeys(reads=("ray_port_base", "ray_timeout", "local_nproc"),
                                                 lenient=True)

    @classmethod
    def shares_filesystem(cls, values: Mapping[str, Any]) -> bool:
        """It runs here."""
        return True

    def prepare(self, job: CompiledJob, *, dependencies: Sequence[str] = ()) -> None:
        """Nothing: a local run builds its command when it starts."""
        return None

    def render(self, job: CompiledJob, prepared: None) -> DryRun:
        """The command line a run here starts."""
        return local_dry_run(job)

    def submit(self, job: CompiledJob, prepared: None) -> int:
        """Run it here; the script's exit code."""
        from nemo_runspec.execution.local import run_local

        return run_local(job)


def local_dry_run(job: CompiledJob) -> DryRun:
    """The local command of ``job``, script arguments that look secret redacted."""
    from nemo_runspec.execution.local import local_preview
    from nemo_runspec.secrets import redact_text, secret_arguments

    # a local run passes script arguments as they are; the preview never shows a secret one
    line = local_preview(job.runspec, job.job_config, job.passthrough)
    return DryRun(commands=[redact_text(line, secret_arguments(job.passthrough))])
