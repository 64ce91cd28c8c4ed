"""``show_dry_run``: a compiled job's dry run as its backend renders it (the local command,
or the exact sbatch script of a prepared Slurm job), printed by
:func:`nemo_runspec.execution.dry_run_display.show_rendered`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from nemo_runspec.job.compiled import CompiledJob
    from nemo_runspec.slurm.prepared import PreparedJob


def show_dry_run(job: CompiledJob, slurm_job: PreparedJob | None = None, *,
                 console: Console | None = None) -> int:
    """Print the dry run of a compiled job; returns 0 (the exit code of a dry run).

    With ``slurm_job`` the exact sbatch script is rendered (offline,
    :func:`~nemo_runspec.slurm.render_sbatch`); without it, the local command.
    ``${art:...}`` references are shown with what they resolve to now.
    """
    from nemo_runspec.execution.dry_run_display import show_rendered
    from nemo_runspec.job.last_step import take

    if take("dry-run", job, slurm_job):  # a sweep shows its points itself
        return 0
    if slurm_job is None:
        from nemo_runspec.backends.local import local_dry_run

        dry = local_dry_run(job)
    else:
        from nemo_runspec.backends.slurm import slurm_dry_run

        dry = slurm_dry_run(slurm_job)
    show_rendered(job, scripts=dry.scripts, commands=dry.commands, console=console)
    return 0
