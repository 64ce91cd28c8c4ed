"""Take a recipe command's last step instead of running it, while a sweep compiles a point.

A sweep runs the recipe command itself for one point of each allocation shape
(:mod:`nemo_runspec.sweep.driver`), so every command's own checks apply (the
data-prep schema, eval's image plan). The command ends by running the job
here, showing it or submitting it; inside :func:`collecting` those calls
(:func:`~nemo_runspec.execution.run_local`, :func:`~nemo_runspec.cli.display.show_dry_run`,
:func:`~nemo_runspec.slurm.submit`, the other executors' ``run_job``) hand their
job to :func:`~nemo_runspec.job.last_step.take` and return at once, and the sweep
decides what to do with it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from nemo_runspec.job.last_step import taken_by

if TYPE_CHECKING:
    from nemo_runspec.job import CompiledJob
    from nemo_runspec.slurm.prepared import PreparedJob


@dataclass
class Taken:
    """One step a command was about to take: ``kind`` is ``local`` (run here),
    ``dry-run`` (show), ``slurm`` (submit) or ``other`` (another executor)."""

    kind: str
    job: CompiledJob
    prepared: PreparedJob | None = None


@dataclass
class Collector:
    """What the commands run inside :func:`collecting` were about to do, in order."""

    taken: list[Taken] = field(default_factory=list)


@contextlib.contextmanager
def collecting() -> Iterator[Collector]:
    """Inside the block, :func:`~nemo_runspec.job.last_step.take` records instead of letting the caller act."""
    collector = Collector()

    def record(kind: str, job: CompiledJob, prepared: object) -> None:
        collector.taken.append(Taken(kind, job, cast("PreparedJob | None", prepared)))

    with taken_by(record):
        yield collector
