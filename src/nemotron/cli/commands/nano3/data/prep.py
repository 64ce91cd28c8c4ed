"""`nemotron nano3 data prep pretrain|sft|rl`: raw data -> each stage's training data (Ray).

The three stages are one program over three recipe scripts (``_prep_stages.SPECS``), so they
share one flow, forkable like every recipe command: the job compiled from the command line,
its config checked against the stage's schema (before a local run, a dry run or a submission
alike), then the backend the profile names: a local Ray instance, or a Ray job on Slurm.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from nemo_runspec import Runspec
from nemo_runspec.backends import compose
from nemo_runspec.cli.runner import launch
from nemo_runspec.cmdline.recipe_config import RecipeConfig, parse_recipe_config
from nemo_runspec.job.compiled import compile_job
from nemo_runspec.job.run_config import RunConfig
from nemotron.cli.commands.nano3.data._prep_stages import HELP, SPECS, check_stage_config, stage_of  # noqa: F401


def prepare(spec: Runspec, ctx: typer.Context) -> int:
    """The command: the data prep of ``spec``'s stage as the command line asks (:func:`execute`)."""
    return execute(spec, parse_recipe_config(ctx))  # type: ignore[return-value]


def execute(stage: Runspec | str, run: RunConfig | RecipeConfig, *, experiment: Any = None,
            dependencies: list[str] | None = None) -> int | str | None:
    """Compile the data prep of ``stage`` (``pretrain``, ``sft``, ``rl`` or its runspec) as ``run``
    asks, check its config, then run it here, show it or submit it (the exit code), or add its task
    to ``experiment`` (the task id; :func:`nemo_runspec.cli.runner.launch`)."""
    spec = SPECS[stage] if isinstance(stage, str) else stage
    job = compile_job(spec, run, check_artifacts=not compose.composing(experiment, dependencies))  # config + overrides + profile, with provenance
    check_stage_config(job, spec, run.overrides)  # every key typed, ${...} later
    # FORK POINT: the backend the profile names (this machine, Slurm through nemo-run, Docker, ...)
    # takes the job from here; replace this line to launch it elsewhere (docs/dev/architecture.md).
    return launch(job, experiment=experiment, dependencies=dependencies)


def _stage_command(stage: str) -> Callable[[typer.Context], int]:
    def command(ctx: typer.Context) -> int:
        return prepare(SPECS[stage], ctx)

    command.__name__ = command.__qualname__ = stage
    command.__doc__ = HELP.format(stage=stage)
    return command


pretrain, sft, rl = (_stage_command(stage) for stage in SPECS)
