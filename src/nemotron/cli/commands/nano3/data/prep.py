"""`nemotron nano3 data prep pretrain|sft|rl`: raw data -> each stage's training data (Ray).

The three stages are one program over three recipe scripts, so they share one
flow, :func:`prepare`, forkable like every recipe command: the runspec, the
job compiled from the command line, its config checked against the stage's
schema (before a local run, a dry run or a submission alike), a run here (a
local Ray instance) or a Ray job on Slurm through nemo-run (``--dry-run`` shows
the exact script).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from nemo_runspec import Runspec, compose
from nemo_runspec import parse as parse_runspec
from nemo_runspec.cli.recipe_config import RecipeConfig, parse_recipe_config
from nemo_runspec.cli.runner import launch
from nemo_runspec.job import compile_job
from nemo_runspec.run import RunConfig
from nemotron.recipes import RECIPES_DIR

SPECS = {
    "pretrain": parse_runspec(RECIPES_DIR / "nano3/stage0_pretrain/data_prep.py"),
    "sft": parse_runspec(RECIPES_DIR / "nano3/stage1_sft/data_prep.py"),
    "rl": parse_runspec(RECIPES_DIR / "nano3/stage2_rl/data_prep.py"),
}
HELP = """Prepare the {stage} data for Nemotron 3 Nano (Ray).

Examples:
    nemotron nano3 data prep {stage} -c tiny --dry-run
    nemotron nano3 data prep {stage} --run dev num_shards=16 sample=1000
Consumes:
    raw: raw JSONL/Parquet files (input.paths)
    tokenizer: tokenizer.json (tokenizer.path)
Produces:
    data: prepared {stage} data (run.output, e.g. nano3-{stage}-data:latest)
"""


def prepare(spec: Runspec, ctx: typer.Context) -> int:
    """The command: the data prep of ``spec``'s stage as the command line asks (:func:`execute`)."""
    return execute(spec, parse_recipe_config(ctx))  # type: ignore[return-value]


def execute(stage: Runspec | str, run: RunConfig | RecipeConfig, *, experiment: Any = None,
            dependencies: list[str] | None = None) -> int | str | None:
    """Compile the data prep of ``stage`` (``pretrain``, ``sft``, ``rl`` or its runspec) as
    ``run`` asks, check its config, then run it here, show it or submit it; returns the
    exit code. ``experiment`` (a ``nemo_run.Experiment``): add its task there instead and
    return the task id; the caller runs the experiment (None for a dry run, which only shows it).
    ``dependencies``: task ids of the same experiment to wait for (nemo-run's). Composed, its
    ``${art:...}`` are not checked now but when the task starts (an earlier task may publish them).
    """
    spec = SPECS[stage] if isinstance(stage, str) else stage
    job = compile_job(spec, run, check_artifacts=not compose.composing(experiment, dependencies))  # config + overrides + profile, with provenance
    from nemotron.data_prep.validation import check_config  # imports pydantic: not at --help time

    check_config(job.train_config, stage_of(spec), overrides=list(run.overrides))  # every key typed, ${...} later
    if experiment is not None:  # a caller composes: add the task to its experiment, it runs it
        return compose.add_to_experiment(job, experiment, dependencies=dependencies)
    # FORK POINT: the backend the profile names (this machine, Slurm through nemo-run, Docker, ...)
    # takes the job from here; replace this line to launch it elsewhere (docs/dev/architecture.md).
    return launch(job)


def stage_of(spec: Runspec) -> str:
    """The data-prep stage (``pretrain``, ``sft``, ``rl``) of ``spec``: its key in :data:`SPECS`,
    else the last part of its name (``nano3/data/prep/sft`` -> ``sft``)."""
    return next((stage for stage, s in SPECS.items() if s is spec), spec.name.rsplit("/", 1)[-1])


def _stage_command(stage: str) -> Callable[[typer.Context], int]:
    def command(ctx: typer.Context) -> int:
        return prepare(SPECS[stage], ctx)

    command.__name__ = command.__qualname__ = stage
    command.__doc__ = HELP.format(stage=stage)
    return command


pretrain, sft, rl = (_stage_command(stage) for stage in SPECS)
