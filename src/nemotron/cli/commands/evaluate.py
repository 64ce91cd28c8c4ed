"""`nemotron evaluate MODEL`: evaluate a model artifact or a checkpoint path.

A thin command over `nemotron nano3 eval` (same recipe script, configs and code):
MODEL becomes ``run.model=MODEL`` (an artifact reference) or
``deployment.checkpoint_path=/abs/path`` (a path), and without ``-c`` a
checkpoint of the CPU fallback (``step_<N>.pt``) picks the ``tiny`` config.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import typer

from nemo_runspec import parse as parse_runspec
from nemo_runspec.cli.recipe_typer import RecipeTyper
from nemo_runspec.cmdline.recipe_config import RecipeConfig, parse_recipe_config
from nemo_runspec.errors import CLIUsageError
from nemotron.recipes import RECIPES_DIR

#: The nano3/eval recipe (nemotron.cli.commands.nano3.eval is imported only when this runs).
SPEC = parse_runspec(RECIPES_DIR / "nano3/eval/eval.py")

app = RecipeTyper(name="evaluate", help="Evaluate a model artifact or a checkpoint path.")


def _looks_like_path(word: str) -> bool:
    return word.startswith(("/", ".", "~")) or ("/" in word and not word.startswith("art://")) \
        or Path(word).exists()


def with_model(cfg: RecipeConfig) -> tuple[RecipeConfig, str | None]:
    """``cfg`` with MODEL (the one bare word before ``--``) turned into an override;
    also returns the checkpoint path when MODEL is one (else None)."""
    from nemo_runspec.evaluation.evaluator import parse_task_flags

    _, rest = parse_task_flags(cfg.passthrough)
    words = [w for w in rest if not w.startswith("-")]
    if not words:
        raise CLIUsageError("which model? nemotron evaluate MODEL",
                            hint="an artifact (nano3-rl-model-tiny:latest, name:v3) or a checkpoint path")
    if len(words) > 1:
        raise CLIUsageError(f"one model at a time, got {' '.join(words)}",
                            hint="overrides are key=value; script arguments go after --")
    model = words[0]
    path = None
    if _looks_like_path(model):
        path = str(Path(os.path.expanduser(model)).absolute())
        override = f"deployment.checkpoint_path={path}"
    else:
        override = f"run.model={model}"
    passthrough = list(cfg.passthrough)
    passthrough.remove(model)
    ctx = dataclasses.replace(cfg.ctx, overrides=[*cfg.ctx.overrides, override], passthrough=passthrough)
    new = dataclasses.replace(cfg, ctx=ctx, overrides=list(ctx.overrides), passthrough=passthrough,
                              bare_words=[w for w in cfg.bare_words if w != model])
    return new, path


def _fallback_checkpoint(cfg: RecipeConfig, path: str | None) -> bool:
    """True when MODEL (a path, or an artifact this machine resolves) holds CPU-fallback checkpoints."""
    from nemotron.training.evaluate import is_fallback_checkpoint

    if path is None:
        from nemo_runspec.job.compiled import compile_job

        try:
            job = compile_job(SPEC, cfg, check_artifacts=False)
            ref = str(job.train_config.run.model)
            path = job.registry.resolve(ref).path
        except Exception:  # noqa: BLE001 - not resolvable here: keep the default config
            return False
    return is_fallback_checkpoint(str(path))


def evaluate(ctx: typer.Context) -> int:
    """Evaluate MODEL: an artifact or a checkpoint path (NeMo Evaluator; the CPU fallback for tiny models).

    MODEL is an artifact reference (name[:version|alias], art://...) or a checkpoint
    path. The nano3 eval recipe's default config evaluates it with NeMo Evaluator;
    a CPU-fallback checkpoint (step_<N>.pt, from the tiny chain) gets -c tiny
    unless -c says otherwise. Everything else is as for nemotron nano3 eval:
    --task NAME, overrides, --run/--batch/--dry-run (docs/evaluation.md).

    Examples:
        nemotron evaluate nano3-rl-model-tiny:latest
        nemotron evaluate ~/.nemotron/jobs/nano3-pretrain/<job>/checkpoints --task heldout_perplexity
        nemotron evaluate nano3-rl-model:latest --task mmlu --run dev
    Consumes:
        model: MODEL (an artifact or a path)
    Produces:
        eval: results.json with the scores (publish.name)
    """
    from nemotron.cli.commands.nano3.eval import evaluate_job

    cfg, path = with_model(parse_recipe_config(ctx))
    if cfg.config is None and _fallback_checkpoint(cfg, path):
        print("note: the model is a CPU-fallback checkpoint: using -c tiny", file=sys.stderr)
        gctx = dataclasses.replace(cfg.ctx, config="tiny")
        cfg = dataclasses.replace(cfg, ctx=gctx, config="tiny")
    return evaluate_job(cfg)


app.add_recipe_command(evaluate, spec=SPEC, name="evaluate")
