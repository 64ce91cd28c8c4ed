"""`nemotron nano3 eval` (also `nemotron nano3 model eval`): the forkable evaluation command.

It reads like pretrain.py, with one more step: the compiled job is made an
evaluation job (``nemo_runspec.evaluator.prepare_eval_job``: ``--task`` flags,
env.toml ``[wandb]`` into the evaluator config, the container images and their
squash plans). Everything past the FORK POINT is what to replace to launch
elsewhere.
"""

from __future__ import annotations

from typing import Any

import typer

from nemo_runspec import compose, evaluator
from nemo_runspec import parse as parse_runspec
from nemo_runspec.cli.recipe_config import RecipeConfig, parse_recipe_config
from nemo_runspec.cli.runner import launch
from nemo_runspec.job import compile_job
from nemo_runspec.run import RunConfig
from nemotron.recipes import RECIPES_DIR
from nemotron.training.config_check import typed_config

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
    """Compile, then run here, show, or submit one evaluation (also `nemotron evaluate`).

    ``experiment`` (a ``nemo_run.Experiment``): add its task there instead and return the
    task id; the caller runs the experiment (None for a dry run, which only shows it).
    ``dependencies``: task ids of the same experiment to wait for (nemo-run's). Composed, its
    ``${art:...}`` are not checked now but when the task starts (an earlier task may publish them).
    The evaluator images' ``.sqsh`` imports are then not submitted.
    """
    job = compile_job(SPEC, cfg, check=typed_config("eval"),
                      check_artifacts=not compose.composing(experiment, dependencies))
    ev = evaluator.prepare_eval_job(job)  # + tasks, W&B, images
    job = ev.job
    if experiment is not None:  # a caller composes: add the task to its experiment, it runs it
        return compose.add_to_experiment(job, experiment, dependencies=dependencies)
    from nemotron.training.evaluate import show_plan

    # FORK POINT: the backend the profile names (this machine, Slurm through nemo-run, Docker, ...)
    # takes the job from here, after the evaluator images' .sqsh imports where it can wait for
    # them (Slurm with squash_dir); replace this line to launch it elsewhere (docs/dev/architecture.md).
    return launch(job, extra=lambda console: show_plan(ev, console=console),
                  before_submit=lambda: evaluator.submit_image_squashes(ev))


#: The name every recipe command module gives its execute function.
execute = evaluate_job
