"""`nemotron nano3 eval` (also `nemotron nano3 model eval`): the forkable evaluation command, like
pretrain.py with one more step, :func:`nemotron.training.evaluate.prepare_eval` (tasks, W&B, images)."""

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
from nemotron.training.evaluate import prepare_eval

SPEC = parse_runspec(RECIPES_DIR / "nano3/eval/eval.py")


def eval(ctx: typer.Context) -> int:
    """Evaluate a model with NeMo Evaluator (the tiny CPU models: -c tiny).

    The default config hands the RL model (run.model) to nemo-evaluator-launcher,
    which serves it with vLLM and runs the benchmarks (mmlu, gsm8k, ...) as its
    own Slurm jobs; scores go to its output dir and, with env.toml [wandb]
    project/entity, to W&B. -c tiny evaluates the tiny CPU chain's model here, for
    real: held-out perplexity and exact-match accuracy (docs/evaluation.md).
    Select tasks with --task NAME (repeatable) or tasks=[a,b].

    Examples:
        nemotron nano3 eval -c tiny
        nemotron nano3 eval -c tiny --task heldout_perplexity run.model=nano3-pretrain-model-tiny:latest
        nemotron nano3 eval --dry-run --task mmlu --task gsm8k
        nemotron nano3 eval --run dev run.model=nano3-sft-model:v2
    Consumes:
        model: the checkpoint to evaluate (run.model, default the RL stage's)
        data: tiny only: pretrain data (held-out perplexity) and RL data (answers)
    Produces:
        eval: results.json with the scores (publish.name: nano3-eval, nano3-eval-tiny)
    """
    return evaluate_job(parse_recipe_config(ctx))  # type: ignore[return-value]


def evaluate_job(cfg: RunConfig | RecipeConfig, *, experiment: Any = None,
                 dependencies: list[str] | None = None) -> int | str | None:
    """Compile, then run here, show, submit (also `nemotron evaluate`) or compose one evaluation
    (:func:`nemo_runspec.cli.runner.launch`; composed, the images' imports are not submitted)."""
    job = compile_job(SPEC, cfg, check=typed_config("eval"),
                      check_artifacts=not compose.composing(experiment, dependencies))
    # FORK POINT: the backend the profile names takes the job from here, after the images' .sqsh
    # imports where it can wait for them; replace this line to launch it elsewhere (docs/dev/architecture.md).
    return launch(prepare_eval(job), experiment=experiment, dependencies=dependencies)


execute = evaluate_job  # the name every recipe command module gives its execute function
