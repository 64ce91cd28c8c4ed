"""`nemotron nano3 sft`: the forkable command of the supervised fine-tuning stage.

Same shape as `nano3 pretrain` (see its module docstring); the recipe script
and the artifacts it consumes differ.
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

SPEC = parse_runspec(RECIPES_DIR / "nano3/stage1_sft/train.py")


def sft(ctx: typer.Context) -> int:
    """Supervised fine-tuning of Nemotron 3 Nano with Megatron-Bridge (torchrun).

    Starts from the pretrained checkpoint when `run.model` resolves, else from
    scratch with a warning; the loss covers assistant tokens only.

    Examples:
        nemotron nano3 sft -c tiny --dry-run
        nemotron nano3 sft --run dev optimizer.lr=1e-5
    Consumes:
        data: packed SFT data (run.data, from nano3 data prep sft)
        model: pretrained checkpoint (run.model)
    Produces:
        model: SFT checkpoint (nano3-sft-model)
    """
    return execute(parse_recipe_config(ctx))


def execute(run: RunConfig | RecipeConfig, *, experiment: Any = None,
            dependencies: list[str] | None = None) -> int | str | None:
    """Compile the SFT job of ``run``, then run it here, show it or submit it (the exit code), or add
    its task to ``experiment`` (the task id; :func:`nemo_runspec.cli.runner.launch`). Composed,
    its ``${art:...}`` are checked when the task starts (an earlier task may publish them)."""
    job = compile_job(SPEC, run, check=typed_config("sft"),
                      check_artifacts=not compose.composing(experiment, dependencies))  # config + overrides + profile, with provenance
    # FORK POINT: the backend the profile names (this machine, Slurm through nemo-run, Docker, ...)
    # takes the job from here; replace this line to launch it elsewhere (docs/dev/architecture.md).
    return launch(prepare_native(job), experiment=experiment, dependencies=dependencies)
