"""Profile keys -> nemo-run's executor of a platform backend (docker, skypilot, dgxcloud,
lepton; nemo-run 0.11.1), from what the backend's class declares (``backends/<name>.py``).

:func:`executor_fields` is the whole mapping (the keyword arguments the executor class is
built with), so the dry run shows exactly what the executor holds and tests check every
field against the real dataclass. Which key each backend reads: its ``profile``; the table:
docs/env-toml.md. The backend is found by name through the registry
(:func:`nemo_runspec.env.registry.backend_class`): this layer imports no backend.

Every job starts the same way: ``bash /nemo_run/nemotron-job.sh`` (written by
:mod:`nemo_runspec.execution.backend_job` into the job dir, which each executor
puts at ``/nemo_run``), so nothing the user wrote is pasted into a command line
that nemo-run builds.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from nemo_runspec.env.registry import BUILTIN, backend_class
from nemo_runspec.errors import ExecutionError

if TYPE_CHECKING:
    from nemo_run.core.execution.base import Executor
    from nemo_run.core.packaging.base import Packager


@runtime_checkable
class Platform(Protocol):
    """What a backend on one of nemo-run's other executors declares
    (:class:`nemo_runspec.backends.platform.PlatformBackend`): read here, never imported."""

    name: ClassVar[str]
    nemo_run_executor: ClassVar[str]
    install_hint: ClassVar[str]
    rendezvous: ClassVar[tuple[str, str] | None]

    def missing(self, module: ModuleType) -> str | None:
        """What nemo-run's executor module, imported, says is not installed (None: nothing)."""
        ...

    def nodes_problem(self, nodes: int) -> tuple[str, str] | None:
        """(problem, hint) when the platform cannot run ``nodes`` nodes; None: it can."""
        ...

    def executor_fields(self, values: Mapping[str, Any], *, nodes: int, gpus: int, nproc: int,
                        image: str | None) -> dict[str, object]:
        """nemo-run's executor keyword arguments (besides ``env_vars``) for these values."""
        ...

    def deliverable_secrets(self, secrets: dict[str, str], values: Mapping[str, Any]) -> dict[str, str]:
        """The secrets that go into the job's 0600 file on the platform."""
        ...

    def place_job_dir(self, executor: Executor, relative: str) -> None:
        """Point ``executor`` at the job dir on the platform's storage."""
        ...


def platform(kind: str) -> Platform:
    """The declarations of executor ``kind``'s backend; an :class:`ExecutionError` when it is
    not one of nemo-run's other executors (local and Slurm executors are built by
    :func:`nemo_runspec.execution.executor.create_executor` itself)."""
    cls = backend_class(kind)
    if not isinstance(cls, Platform):
        raise ExecutionError(f"unknown executor {kind!r}", key="executor", hint=", ".join(BUILTIN))
    return cls


def executor_fields(kind: str, values: Mapping[str, Any], *, nodes: int, gpus: int, nproc: int,
                    image: str | None, env_vars: Mapping[str, str]) -> dict[str, object]:
    """The keyword arguments of ``kind``'s nemo-run executor for the merged profile ``values``.

    ``nodes``/``gpus``/``image`` are the resolved resources and image (profile over
    runspec), ``nproc`` the processes per node, ``env_vars`` the plain environment.
    """
    fields = platform(kind).executor_fields(values, nodes=nodes, gpus=gpus, nproc=nproc, image=image)
    return {"env_vars": dict(env_vars), **fields}


def executor_class(kind: str) -> type:
    """nemo-run's executor class for ``kind``; a missing optional dependency is one line saying
    what to install (SkyPilot: ``pip install "skypilot[kubernetes]"``)."""
    import importlib

    from nemo_runspec._nemo_run import lean

    lean()
    declared = platform(kind)
    module_name, _, name = declared.nemo_run_executor.partition(":")
    try:
        module = importlib.import_module(module_name)
        cls = getattr(module, name)
    except ImportError as exc:
        raise ExecutionError(f"executor = {kind!r} needs a package that is not installed: {exc}",
                             key="executor", hint=declared.install_hint) from None
    missing = declared.missing(module)
    if missing is not None:
        raise ExecutionError(f"executor = {kind!r} needs {missing}, which is not installed",
                             key="executor", hint=declared.install_hint)
    return cls


def executor_class_name(kind: str) -> str:
    """The class name of ``kind``'s nemo-run executor (``DockerExecutor``), without importing it."""
    return platform(kind).nemo_run_executor.rpartition(":")[2]


def build_executor(kind: str, fields: Mapping[str, object], *, packager: Packager | None) -> Executor:
    """Construct ``kind``'s nemo-run executor from :func:`executor_fields` and ``packager``."""
    cls = executor_class(kind)
    try:
        return cls(**fields, packager=packager)
    except (AssertionError, TypeError, ValueError) as exc:
        raise ExecutionError(f"nemo-run's {cls.__name__} refused the profile: {exc}", key="executor") from None
