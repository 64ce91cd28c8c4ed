"""`nemotron kit preflight`: check a profile before anyone spends GPU-hours on it.

Same shape as `nano3 pretrain` (see its module docstring): the check is a
recipe script run like any training stage, so it exercises the same launch
path (packaging, executor, container, secrets) a real job would.
"""

from __future__ import annotations

from typing import Any

import typer

from nemo_runspec import parse as parse_runspec
from nemo_runspec.cli.runner import launch
from nemo_runspec.cmdline.recipe_config import RecipeConfig, parse_recipe_config
from nemo_runspec.job.compiled import compile_job
from nemo_runspec.job.run_config import RunConfig
from nemotron.recipes import RECIPES_DIR

SPEC = parse_runspec(RECIPES_DIR / "kit/preflight.py")


def preflight(ctx: typer.Context) -> int:
    """Check a profile: rendezvous, all-reduce, GPUs, memory, mounts and env on every node.

    All ranks rendezvous across all nodes; an all-reduce (NCCL with GPUs, gloo
    without) must return the right sum; each rank reports host, GPU visibility
    and free memory; mounts and the job dir must be readable and writable, and
    the profile's env vars present (names only, values never printed). Each
    node reports the training libraries its image carries (megatron-bridge,
    megatron-core, nemo-rl, nemo-evaluator and its launcher, or "none of"
    them) and where they differ from the compatibility table's row for the
    image. A per-node table is printed and the command exits non-zero on any
    failure.

    Examples:
        nemotron kit preflight
        nemotron kit preflight --run dev
        nemotron kit preflight --run dev preflight.expect_gpus_per_node=8 'preflight.require_env=[HF_TOKEN]'
    Produces:
        report: preflight.json in the job dir (per-rank results)
    """
    return execute(parse_recipe_config(ctx))


def execute(run: RunConfig | RecipeConfig, *, experiment: Any = None) -> int | str | None:
    """Compile the preflight check of ``run``, then run it here, show it or submit it (the exit
    code), or add its task to ``experiment`` (the task id; :func:`nemo_runspec.cli.runner.launch`)."""
    job = compile_job(SPEC, run)  # config + overrides + profile, with provenance
    # FORK POINT: the backend the profile names (this machine, Slurm through nemo-run, Docker, ...)
    # takes the job from here; replace this line to launch it elsewhere (docs/dev/architecture.md).
    return launch(job, experiment=experiment)
