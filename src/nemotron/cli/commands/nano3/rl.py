"""`nemotron nano3 rl`: GRPO reinforcement learning of Nemotron 3 Nano with NeMo-RL (Ray).

Reads top to bottom: the recipe script's runspec; the job compiled from the
command line (config, overrides, env.toml profile); then a run here, or the
code packaged, nemo-run's SlurmExecutor built and the job submitted. The FORK
POINT marks what to replace to launch it on another backend.
"""

from __future__ import annotations

import typer

from nemo_runspec import parse as parse_runspec
from nemo_runspec.cli.display import show_dry_run
from nemo_runspec.cli.meta import RecipeMeta
from nemo_runspec.cli.recipe_config import parse_recipe_config
from nemo_runspec.execution import run_local
from nemo_runspec.job import compile_job
from nemo_runspec.packaging import build_packager
from nemo_runspec.slurm import prepare_job, submit
from nemotron.recipes import RECIPES_DIR

SPEC = parse_runspec(RECIPES_DIR / "nano3/stage2_rl/train.py")
META = RecipeMeta.from_spec(
    SPEC,
    description="GRPO reinforcement learning of Nemotron 3 Nano with NeMo-RL (Ray).",
    inputs={"data": "RL prompts (run.data, from nano3 data prep rl)", "model": "SFT checkpoint (run.model)"},
    outputs={"model": "RL checkpoint (nano3-rl-model)"},
    examples=["nemotron nano3 rl -c tiny --dry-run", "nemotron nano3 rl --batch prod grpo.max_num_steps=500"],
)


def rl(ctx: typer.Context) -> None:
    """GRPO reinforcement learning of Nemotron 3 Nano with NeMo-RL (Ray)."""
    job = compile_job(SPEC, parse_recipe_config(ctx))  # config + overrides + env.toml profile, with provenance
    if job.is_local:  # no profile, or executor = "local": the script starts a local Ray instance
        raise typer.Exit(show_dry_run(job) if job.dry_run else run_local(job))
    # FORK POINT: from here on the job goes to Slurm through nemo-run; to launch it
    # elsewhere, replace these lines (docs/dev/architecture.md, "Forking a command").
    packager, plan = build_packager(job)  # profile `packager`, else the recipe's default
    slurm_job = prepare_job(job, packager, plan)  # SlurmExecutor + job dir; our Ray template, the script as driver (runspec launch)
    if job.dry_run:  # the exact sbatch script, rendered offline; nothing is sent
        raise typer.Exit(show_dry_run(job, slurm_job))
    submitted = submit(slurm_job, attached=job.attached)  # --batch returns; --run follows the log
    raise typer.Exit(submitted.exit_code or 0)
