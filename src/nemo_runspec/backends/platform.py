"""What the ``docker``, ``skypilot``, ``dgxcloud`` and ``lepton`` backends share: each runs a job
on one of nemo-run's other executors (:mod:`nemo_runspec.execution.backend_job` prepares and
shows the job, :mod:`nemo_runspec.execution.backend_run` starts it). Each is one file
(``backends/<name>.py``) whose class declares what is its own: its env.toml keys, nemo-run's
executor class and its fields, how a multi-node torchrun finds its head, which secrets it can
deliver, where the job dir goes on the platform's storage. None of them chains jobs, waits
for another job, runs a sweep's points or joins a caller's Experiment.
Standard library only at import (``nemotron --help`` stays cheap)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

from nemo_runspec.env.keys import ProfileKeys

if TYPE_CHECKING:
    from nemo_run.core.execution.base import Executor

    from nemo_runspec.backends.base import DryRun
    from nemo_runspec.execution.backend_job import BackendJob
    from nemo_runspec.job.compiled import CompiledJob

#: the hint of a missing ``container_image`` (every platform but SkyPilot needs one)
IMAGE_HINT = "the image the job runs in, e.g. container_image = \"nvcr.io/nvidia/nemo:25.11\""


class PlatformBackend:
    """One of nemo-run's other executors; the subclass declares which and what is its own."""

    name: ClassVar[str]
    chains: ClassVar[bool] = False
    waits_for_jobs: ClassVar[bool] = False
    sweeps: ClassVar[bool] = False
    composes: ClassVar[bool] = False
    runs_here: ClassVar[bool] = False
    bare_metal: ClassVar[bool] = False
    profile: ClassVar[ProfileKeys]
    #: nemo-run's executor class, ``module:Class``
    nemo_run_executor: ClassVar[str]
    #: what to install when that class's module (or what it needs) is missing
    install_hint: ClassVar[str] = "install nemo_run's extra for it"
    #: (head node address, node rank) of a multi-node torchrun, as the platform exports them
    rendezvous: ClassVar[tuple[str, str] | None] = None

    @classmethod
    def shares_filesystem(cls, values: Mapping[str, Any]) -> bool:
        """Whether the job sees this machine's filesystem: not on a platform's own machines."""
        return False

    @classmethod
    def missing(cls, module: ModuleType) -> str | None:
        """What nemo-run's executor module, imported, says is not installed (None: nothing)."""
        return None

    @classmethod
    def nodes_problem(cls, nodes: int) -> tuple[str, str] | None:
        """(problem, hint) when the platform cannot run ``nodes`` nodes; None: it can."""
        return None

    @classmethod
    def executor_fields(cls, values: Mapping[str, Any], *, nodes: int, gpus: int, nproc: int,
                        image: str | None) -> dict[str, object]:
        """The keyword arguments of nemo-run's executor (besides ``env_vars``) for the merged
        profile ``values``, the resolved resources and image."""
        raise NotImplementedError

    @classmethod
    def deliverable_secrets(cls, secrets: dict[str, str], values: Mapping[str, Any]) -> dict[str, str]:
        """The secrets that go into the job's 0600 file in the job dir (which only the
        container or the VM sees): all of them, unless the platform says otherwise."""
        return secrets

    @classmethod
    def place_job_dir(cls, executor: Executor, relative: str) -> None:
        """Point ``executor`` at the job dir on the platform's storage (``relative`` to
        nemo-run's home there); nothing when the platform mounts ours."""

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
        """Write the job dir and start the job in a nemo-run Experiment; the exit code."""
        from nemo_runspec.execution.backend_run import submit_experiment

        return submit_experiment(prepared)


def set_fields(out: dict[str, object], values: Mapping[str, Any], keys: Iterable[str]) -> None:
    """Copy each of ``keys`` set in ``values`` into ``out`` (lists and tables as plain ones)."""
    for key in keys:
        if values.get(key) is not None:
            value = values[key]
            out[key] = list(value) if isinstance(value, list | tuple) else (
                dict(value) if isinstance(value, Mapping) else value)


def plain(value: object) -> dict[str, object]:
    """A validated table (pydantic model or dict) as the plain dict nemo-run passes on."""
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(by_alias=True, exclude_none=True)
    return dict(value)  # type: ignore[call-overload]
