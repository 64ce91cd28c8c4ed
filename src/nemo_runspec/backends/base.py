"""What a backend is: where a compiled job runs (this machine, Slurm, Docker, ...).

A backend turns a :class:`~nemo_runspec.job.compiled.CompiledJob` into something it can show or start
(:meth:`Backend.prepare`), says what a ``--dry-run`` shows of it (:meth:`Backend.render`, data
only: the CLI prints it) and starts it (:meth:`Backend.submit`). The registry
(:mod:`nemo_runspec.env.registry`) finds the class the profile's ``executor`` names
(:func:`backend_for`); :func:`nemo_runspec.cli.runner.launch` is the one place a recipe
command hands its job over. Standard library only at import (``nemotron --help`` stays cheap).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from nemo_runspec.env.registry import backend_class

if TYPE_CHECKING:
    from nemo_runspec.env.keys import ProfileKeys
    from nemo_runspec.job.compiled import CompiledJob


@dataclass(frozen=True)
class DryRun:
    """What a backend adds to a job's ``--dry-run``, made offline (nothing written or contacted).

    Attributes:
        scripts: title -> exact text of each file the job would run (sbatch script, the
            executor's fields, the job script); ``None``: none.
        commands: the command lines a run here would start; ``None``: none.
        warnings: lines for stderr after the display (what submitting would refuse).
    """

    scripts: Mapping[str, str] | None = None
    commands: Sequence[str] | None = None
    warnings: tuple[str, ...] = field(default=())


P = TypeVar("P")


class Backend(Protocol[P]):
    """Where a compiled job runs. ``P`` is what :meth:`prepare` builds (opaque to callers).

    A class implementing it is registered by its :attr:`name`: built in
    (:data:`nemo_runspec.env.registry.BUILTIN`) or through the entry-point group
    ``nemo_runspec.backends`` of an installed distribution (docs/dev/architecture.md).
    Its class declares, once, all that differs between executors; shared code reads these
    declarations and never compares executor names (``tests/test_executor_names.py``).
    Pipelines (``nano3 pipe``), ``-m`` sweeps and composing into a caller's Experiment still
    drive the built-ins' own code: a plug-in sets :attr:`chains`, :attr:`waits_for_jobs`,
    :attr:`sweeps` and :attr:`composes` to False (they are then refused in one line).
    The module stays cheap to import: standard library (and the layers below) only.
    """

    #: what ``executor = NAME`` in env.toml says
    name: ClassVar[str]
    #: runs a pipeline's stages in order (here one after another, or as a chain of jobs)
    chains: ClassVar[bool]
    #: a job can wait for jobs submitted just before it (the evaluator's image imports)
    waits_for_jobs: ClassVar[bool]
    #: runs the points of a ``-m`` sweep (here, or as one array)
    sweeps: ClassVar[bool]
    #: its job can be added to a caller's ``nemo_run.Experiment`` (``execute(run, experiment=)``)
    composes: ClassVar[bool]
    #: the job is a process tree of this CLI, on this machine (no submission)
    runs_here: ClassVar[bool]
    #: a profile without ``container_image`` runs on the nodes' own Python (bare metal)
    bare_metal: ClassVar[bool]
    #: nemo-run's executor class its jobs are built on (``module:Class``); None: none
    nemo_run_executor: ClassVar[str | None]
    #: what it reads of an env.toml profile: its keys, required keys, rules
    profile: ClassVar[ProfileKeys]

    @classmethod
    def shares_filesystem(cls, values: Mapping[str, Any]) -> bool:
        """Whether a job of the merged profile ``values`` sees this machine's filesystem
        (where ``${art:...}`` roots and job dirs written here can be read by the job)."""
        ...

    def prepare(self, job: CompiledJob, *, dependencies: Sequence[str] = ()) -> P:
        """Build what showing or starting ``job`` needs (packaging included); nothing is
        written or contacted yet. ``dependencies``: ids of jobs it must wait for."""
        ...

    def render(self, job: CompiledJob, prepared: P) -> DryRun:
        """What ``--dry-run`` shows of ``prepared`` beyond the job's own configs."""
        ...

    def submit(self, job: CompiledJob, prepared: P) -> int:
        """Run or submit ``prepared``; the command's exit code (0 once a detached job is
        accepted; the job's own when it is followed)."""
        ...


def backend_for(job: CompiledJob) -> Backend[Any]:
    """The backend the job's profile names (``local`` without a profile), instantiated."""
    return backend_class(job.executor)()
