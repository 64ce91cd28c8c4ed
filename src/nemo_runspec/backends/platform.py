"""``executor = "docker" | "skypilot" | "dgxcloud" | "lepton"``: nemo-run's executor of that
name (:mod:`nemo_runspec.execution.backend_job` prepares and shows the job,
:mod:`nemo_runspec.execution.backend_run` starts it). None of them chains jobs, waits for
another job or runs a sweep's points."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from nemo_runspec.backends.base import DryRun
    from nemo_runspec.execution.backend_job import BackendJob
    from nemo_runspec.job.compiled import CompiledJob


class PlatformBackend:
    """One of nemo-run's other executors; the subclass names which."""

    name: ClassVar[str]
    chains: ClassVar[bool] = False
    waits_for_jobs: ClassVar[bool] = False
    sweeps: ClassVar[bool] = False

    def prepare(self, job: CompiledJob, *, dependencies: Sequence[str] = ()) -> BackendJob:
        """The packaged code, the executor's fields, the job script and the secrets."""
        from nemo_runspec.execution.backend_job import prepare
        from nemo_runspec.job.packager import packager_for

        return prepare(job, *packager_for(job))

    def render(self, job: CompiledJob, prepared: BackendJob) -> DryRun:
        """The executor's fields (secrets redacted), the job script, what submission would refuse."""
        from nemo_runspec.backends.base import DryRun
        from nemo_runspec.execution.backend_job import dry_run_parts

        scripts, warnings = dry_run_parts(prepared)
        return DryRun(scripts=scripts, warnings=warnings)

    def submit(self, job: CompiledJob, prepared: BackendJob) -> int:
        """Write the job dir and start the job; the exit code."""
        from nemo_runspec.execution.backend_run import submit

        return submit(prepared)


class DockerBackend(PlatformBackend):
    """One container on this machine's engine."""

    name: ClassVar[str] = "docker"


class SkypilotBackend(PlatformBackend):
    """A SkyPilot cluster."""

    name: ClassVar[str] = "skypilot"


class DgxCloudBackend(PlatformBackend):
    """A DGX Cloud training workload."""

    name: ClassVar[str] = "dgxcloud"


class LeptonBackend(PlatformBackend):
    """A Lepton job."""

    name: ClassVar[str] = "lepton"
