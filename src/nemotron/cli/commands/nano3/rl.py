"""`nemotron nano3 rl`: the forkable command of the reinforcement learning stage.

Same shape as `nano3 pretrain` (see its module docstring), launched as a Ray
job: on Slurm our Ray template starts a head and workers across the
allocation and runs the recipe script as the driver.
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

SPEC = parse_runspec(RECIPES_DIR / "nano3/stage2_rl/train.py")


def rl(ctx: typer.Context) -> int:
    """GRPO reinforcement learning of Nemotron 3 Nano with NeMo-RL (Ray).

    Locally the script starts its own Ray instance; on Slurm it is the driver
    of a Ray cluster spanning every node of the job.

    Examples:
        nemotron nano3 rl -c tiny --dry-run
        nemotron nano3 rl --batch prod grpo.max_num_steps=500
    Consumes:
        data: RL prompts (run.data, from nano3 data prep rl)
        model: SFT checkpoint (run.model)
    Produces:
        model: RL checkpoint (nano3-rl-model)
    """
    return execute(parse_recipe_config(ctx))


def execute(run: RunConfig | RecipeConfig, *, experiment: Any = None,
            dependencies: list[str] | None = None) -> int | str | None:
    """Compile the RL job of ``run``, then run it here, show it or submit it (the exit code), or add
    its task to ``experiment`` (the task id; :func:`nemo_runspec.cli.runner.launch`). Composed,
    its ``${art:...}`` are checked when the task starts (an earlier task may publish them)."""
    job = compile_job(SPEC, run, check=typed_config("rl"),
                      check_artifacts=not compose.composing(experiment, dependencies))  # config + overrides + profile, with provenance
    # FORK POINT: the backend the profile names (this machine, Slurm through nemo-run, Docker, ...)
    # takes the job from here; replace this line to launch it elsewhere (docs/dev/architecture.md).
    return launch(prepare_native(job), experiment=experiment, dependencies=dependencies)
