"""A command's last step (run the job here, show it, submit it), which a caller may take instead.

Every recipe command ends by handing its compiled job to one of the layers below it
(:func:`~nemo_runspec.execution.run_local`, :func:`~nemo_runspec.backends.dry_run.show_dry_run`,
:func:`~nemo_runspec.slurm.submit`, the other executors' ``run_job``, ``cli.runner.launch``).
Each first calls :func:`take`: inside :func:`taken_by` the job goes to the receiver and the
caller returns at once without acting; outside, :func:`take` says False and the caller goes on.
A sweep (:mod:`nemo_runspec.sweep.collect`) compiles its points this way. The receiver is held
in a context variable: a block nests inside another and another thread is not taken.

This module imports nothing, so the hook costs nothing when no one takes the step.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nemo_runspec.job.compiled import CompiledJob

#: gets ``(kind, job, prepared)``: see :func:`take`
Receiver = Callable[[str, "CompiledJob", object], None]

_RECEIVER: contextvars.ContextVar[Receiver | None] = contextvars.ContextVar("nemotron_last_step", default=None)


@contextlib.contextmanager
def taken_by(receiver: Receiver) -> Iterator[None]:
    """Inside the block, :func:`take` hands each step to ``receiver`` instead of letting the caller act."""
    token = _RECEIVER.set(receiver)
    try:
        yield
    finally:
        _RECEIVER.reset(token)


def take(kind: str, job: CompiledJob, prepared: object = None) -> bool:
    """Hand the step to the receiver of :func:`taken_by` and return True (the caller then
    returns without acting); outside such a block return False. ``kind`` is ``local`` (run
    here), ``dry-run`` (show), ``slurm`` (submit) or ``other`` (another executor); ``prepared``
    the Slurm job it was about to show or submit, if any."""
    receiver = _RECEIVER.get()
    if receiver is None:
        return False
    receiver(kind, job, prepared)
    return True
