"""`nemotron nano3 pretrain`: the forkable command of the pretraining stage.

It reads as the reference describes: the recipe script's runspec; the job
compiled from the command line; then the backend the profile names (this
machine, Slurm through nemo-run, Docker, ...; ``nemo_runspec.backends``) shows,
runs or submits it (``--dry-run`` shows the exact script). The marked line of
:func:`execute` is the fork point: replace it to launch elsewhere.
"""

from __future__ import annotations

from typing import Any

import typer

from nemo_runspec import parse as parse_runspec
from nemo_runspec.backends import compose
from nemo_runspec.cli.runner import launch
from nemo_runspec.cmdline.recipe_config import RecipeConfig, parse_recipe_config
from nemo_runspec.job.compiled import compile_job
from nemo_runspec.job.run_config import RunConfig
from nemotron.recipes import RECIPES_DIR
from nemotron.training.config_check import typed_config
from nemotron.training.native_plan import prepare_native

SPEC = parse_runspec(RECIPES_DIR / "nano3/stage0_pretrain/train.py")


def pretrain(ctx: typer.Context) -> int:
    """Pretrain Nemotron 3 Nano with Megatron-Bridge (torchrun).

    torchrun starts one process per GPU on each node. Without Megatron-Bridge,
    the tiny configs train a small GPT on the CPU instead (docs/training.md).

    Examples:
        nemotron nano3 pretrain -c tiny --dry-run
        nemotron nano3 pretrain -c tiny --run dev train.train_iters=50
        nemotron nano3 pretrain --batch prod run.env.nodes=8 -- --extra-script-flag
    Consumes:
        data: tokenized pretraining corpus (run.data, from nano3 data prep pretrain)
    Produces:
        model: pretrained checkpoint (checkpoint.save)
    """
    return execute(parse_recipe_config(ctx))


def execute(run: RunConfig | RecipeConfig, *, experiment: Any = None,
            dependencies: list[str] | None = None) -> int | str | None:
    """Compile the pretraining job of ``run``, then run it here, show it or submit it (the exit code), or add
    its task to ``experiment`` (the task id; :func:`nemo_runspec.cli.runner.launch`). Composed,
    its ``${art:...}`` are checked when the task starts (an earlier task may publish them)."""
    job = compile_job(SPEC, run, check=typed_config("pretrain"),
                      check_artifacts=not compose.composing(experiment, dependencies))  # config + overrides + profile, with provenance
    # FORK POINT: the backend the profile names (this machine, Slurm through nemo-run, Docker, ...)
    # takes the job from here; replace this line to launch it elsewhere (docs/dev/architecture.md).
    return launch(prepare_native(job), experiment=experiment, dependencies=dependencies)
