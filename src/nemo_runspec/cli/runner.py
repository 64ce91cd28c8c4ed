"""The FORK POINT every recipe command shares: hand a compiled job to its backend.

:func:`launch` asks the registry for the backend the job's profile names
(:mod:`nemo_runspec.backends`), lets it prepare the job, then shows it (``--dry-run``) or
runs/submits it. No command file branches on the executor's name; a backend another
package registers (entry-point group ``nemo_runspec.backends``) is reached the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from nemo_runspec.job import CompiledJob


def launch(job: CompiledJob, *, extra: Callable[[Console], object] | None = None,
           before_submit: Callable[[], Sequence[str]] | None = None) -> int:
    """Show, run or submit ``job`` on the backend its profile names; the exit code.

    ``extra``: what the command's dry run prints after the job (the native backend's calls,
    the evaluation config); called with the dry run's console, also for a sweep's point.
    ``before_submit``: submits what the job needs first (the evaluator's image imports) and
    returns the ids it waits for; called only when the backend can wait for jobs.
    """
    from rich.console import Console

    from nemo_runspec.backends.base import backend_for
    from nemo_runspec.cli.display import show_rendered
    from nemo_runspec.sweep.collect import take

    backend = backend_for(job)
    if not backend.sweeps and take("other", job):  # a sweep says it cannot run on this executor
        return 0
    waits = list(before_submit()) if before_submit is not None and backend.waits_for_jobs else []
    prepared = backend.prepare(job, dependencies=waits)
    if not job.dry_run:
        return backend.submit(job, prepared)
    console = Console(highlight=False)
    if not (backend.sweeps and take("dry-run", job, prepared)):  # a sweep shows its points itself
        dry = backend.render(job, prepared)
        show_rendered(job, scripts=dry.scripts, commands=dry.commands, warnings=dry.warnings, console=console,
                      extra=extra)
    elif extra is not None:
        extra(console)
    return 0
