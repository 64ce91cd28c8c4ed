"""The FORK POINT every recipe command shares: hand a compiled job to its backend.

:func:`launch` adds the job to a caller's experiment (composing), or asks the registry for
the backend the job's profile names (:mod:`nemo_runspec.backends`), lets it prepare the
job, then shows it (``--dry-run``) or runs/submits it. No command file branches on the
executor's name; a backend another package registers (entry-point group
``nemo_runspec.backends``) is reached the same way. :func:`run_steps` is the same for a
pipeline's stages (``nemotron nano3 pipe``, ``nemotron steps run``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nemo_run.run.experiment import Experiment
    from rich.console import Console

    from nemo_runspec.cmdline.recipe_config import RecipeConfig
    from nemo_runspec.job.compiled import CompiledJob
    from nemo_runspec.pipeline.step import Preparation, Step

#: ``--launcher`` of a pipeline on Slurm: a job per stage (an afterok chain), or one allocation.
LAUNCHERS = ("nemo-run", "sbatch")


def launch(job: CompiledJob | Preparation, *, extra: Callable[[Console], object] | None = None,
           before_submit: Callable[[], Sequence[str]] | None = None, experiment: Experiment | None = None,
           dependencies: list[str] | None = None) -> int | str | None:
    """Show, run or submit ``job`` on the backend its profile names; the exit code.

    ``extra``: what the command's dry run prints after the job (the native backend's calls,
    the evaluation config); called with the dry run's console, also for a sweep's point.
    ``before_submit``: submits what the job needs first (the evaluator's image imports) and
    returns the ids it waits for; called only when the backend can wait for jobs. A
    :class:`~nemo_runspec.pipeline.step.Preparation` (a step's ``prepare`` hook) brings its job,
    ``show`` (as ``extra``) and ``before_submit``.
    ``experiment`` (a ``nemo_run.Experiment``): add the job's task there instead and return
    its task id; the caller runs the experiment (None for a dry run, which only shows it).
    ``dependencies``: task ids of the same experiment to wait for (nemo-run's).
    """
    from nemo_runspec.pipeline.step import Preparation

    if isinstance(job, Preparation):
        job, extra, before_submit = job.job, job.show, job.before_submit
    if experiment is not None:  # a caller composes: add the task to its experiment, it runs it
        from nemo_runspec.backends import compose

        return compose.add_to_experiment(job, experiment, dependencies=dependencies)
    from rich.console import Console

    from nemo_runspec.backends.base import backend_for
    from nemo_runspec.cli.display import show_rendered
    from nemo_runspec.job.last_step import take

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


def run_steps(steps: Sequence[Step], recipe: RecipeConfig, *, resume: bool = True,
              launcher: str = "nemo-run", pin_inputs: bool = True) -> int:
    """Compile ``steps`` from the command line ``recipe``, then show, run here, or submit them
    to Slurm as one chain, or as one allocation with ``launcher="sbatch"`` (following
    it when attached); returns the exit code."""
    import typer

    from nemo_runspec import pipeline
    from nemo_runspec._suggest import did_you_mean
    from nemo_runspec.cli.display import show_pipeline
    from nemo_runspec.errors import CLIUsageError, ConfigError
    from nemo_runspec.job.packager import packager_for

    if launcher not in LAUNCHERS:
        raise CLIUsageError(f"--launcher {launcher!r} is not a pipeline launcher",
                            hint=did_you_mean(launcher, LAUNCHERS) or f"choose one of {', '.join(LAUNCHERS)}")
    if recipe.passthrough:
        raise typer.BadParameter(f"unexpected arguments {' '.join(recipe.passthrough)} (overrides are STAGE.key=value)")
    plans = pipeline.compile_pipeline(steps, recipe.ctx, recipe.overrides, resume=resume, pin_inputs=pin_inputs)
    from nemo_runspec.backends import backend_for

    first = plans[0].job
    if not backend_for(first).chains:  # here in order, or Slurm's afterok chain; not docker, ...
        raise ConfigError(f"a pipeline runs its stages here or on Slurm; executor = {first.executor!r} is not "
                          "supported", key="executor", hint="run the stages one by one with their own commands")
    one_allocation = launcher == "sbatch"
    if one_allocation and plans[0].job.is_local:
        raise CLIUsageError("--launcher sbatch runs the stages in one Slurm allocation: it needs a Slurm profile",
                            hint="add --run PROFILE or --batch PROFILE; without a profile the stages run here in order")
    if any(p.job.dry_run for p in plans):  # -d, or dry_run = true in the profile
        if one_allocation:
            from nemo_runspec.pipeline.sbatch import prepare_allocation

            if all(p.skip for p in plans):
                return show_pipeline(plans, {})
            alloc = prepare_allocation(plans, "<pipe id>", build_packager=packager_for)
            return show_pipeline(plans, alloc.prepared, driver=alloc.driver)
        is_slurm = not plans[0].job.is_local
        prepared = pipeline.prepare_stages(plans, "<pipe id>", build_packager=packager_for) \
            if is_slurm else {}
        return show_pipeline(plans, prepared)
    if plans[0].job.is_local:
        return pipeline.run_local(plans)
    attached = all(p.job.attached for p in plans)  # --run, unless the profile says detach = true
    if all(p.skip for p in plans):
        for line in pipeline.graph_lines(plans):
            typer.echo(line, err=True)
        typer.echo("nothing to submit: every stage's output was made from the same config and inputs "
                   "(--no-resume runs them again)", err=True)
        if not attached:  # --batch: stdout is always the chain's one JSON line
            print(json.dumps(pipeline.chain_record(pipeline.PipeSubmission("", list(plans)))), flush=True)
        return 0
    # Submission: every stage goes to Slurm through nemo-run as one afterok chain,
    # or (--launcher sbatch) into one allocation that runs them in order.
    if one_allocation:
        from nemo_runspec.pipeline.sbatch import follow_allocation, submit_allocation

        sub = submit_allocation(plans, build_packager=packager_for)
    else:
        sub = pipeline.submit_slurm(plans, build_packager=packager_for)
    # stdout is for scripts: --run streams the stages' logs there, --batch prints one JSON line
    try:
        typer.echo(f"pipe {sub.pipe_id}: " + ", ".join(f"{n}={i}" for n, i in sub.job_ids.items()), err=True)
        if attached:
            return follow_allocation(sub) if one_allocation else pipeline.follow_submission(sub)
        typer.echo(f"follow it with: nemotron jobs logs -f {sub.pipe_id}   (state: nemotron jobs status "
                   f"{sub.pipe_id}, cancel: nemotron jobs cancel {sub.pipe_id})", err=True)
    except KeyboardInterrupt:  # the whole chain is in Slurm: never leave without saying how to reach it
        if not attached:  # (the follower of --run says it stopped following, and how to go on)
            typer.echo(f"interrupted after every stage was submitted: pipe {sub.pipe_id} stays in Slurm; "
                       f"nemotron jobs logs -f {sub.pipe_id} follows it, nemotron jobs cancel {sub.pipe_id} "
                       "cancels it", err=True)
            print(json.dumps(pipeline.chain_record(sub)), flush=True)
        raise
    print(json.dumps(pipeline.chain_record(sub)), flush=True)
    return 0
