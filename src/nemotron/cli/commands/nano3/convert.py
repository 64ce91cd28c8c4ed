"""`nemotron nano3 convert`: the SFT checkpoint exported from Megatron to Hugging Face for RL.

Same shape as `nano3 pretrain` (see its module docstring); the recipe script
(``stage1_sft/convert.py``, launched directly: one process) and the artifacts differ.
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
from nemotron.training.native_plan import prepare_native

SPEC = parse_runspec(RECIPES_DIR / "nano3/stage1_sft/convert.py")


def convert(ctx: typer.Context) -> int:
    """Export the SFT checkpoint (Megatron) to Hugging Face with Megatron-Bridge, for NeMo-RL.

    Megatron-Bridge's own AutoBridge export, as the image's release does it
    (docs/training.md, "Checkpoint formats"). The job first checks the image's
    Megatron-Bridge and that the input is a Megatron checkpoint. With -c tiny
    (the CPU fallback chain) there is nothing to convert.

    Examples:
        nemotron nano3 convert --run dev
        nemotron nano3 convert --run dev convert.hf_model=/models/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16
    Consumes:
        model: SFT checkpoint, Megatron format (run.model, nano3-sft-model)
    Produces:
        model: SFT model, Hugging Face format (nano3-sft-model-hf)
    """
    return execute(parse_recipe_config(ctx))


def execute(run: RunConfig | RecipeConfig, *, experiment: Any = None,
            dependencies: list[str] | None = None) -> int | str | None:
    """Compile the convert job of ``run``, then run it here, show it or submit it (the exit code), or add
    its task to ``experiment`` (the task id; :func:`nemo_runspec.cli.runner.launch`). Composed,
    its ``${art:...}`` are checked when the task starts (an earlier task may publish them)."""
    job = compile_job(SPEC, run, check_artifacts=not compose.composing(experiment, dependencies))  # config + overrides + profile, with provenance
    # FORK POINT: the backend the profile names (this machine, Slurm through nemo-run, Docker, ...)
    # takes the job from here; replace this line to launch it elsewhere (docs/dev/architecture.md).
    return launch(prepare_native(job), experiment=experiment, dependencies=dependencies)
