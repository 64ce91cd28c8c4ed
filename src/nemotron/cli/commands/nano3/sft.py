"""`nemotron nano3 sft`: Supervised fine-tuning of Nemotron 3 Nano with Megatron-Bridge (torchrun).

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

SPEC = parse_runspec(RECIPES_DIR / "nano3/stage1_sft/train.py")
META = RecipeMeta.from_spec(
    SPEC,
    description="Supervised fine-tuning of Nemotron 3 Nano with Megatron-Bridge (torchrun).",
    inputs={"data": "packed SFT data (run.data, from nano3 data prep sft)", "model": "pretrained checkpoint (run.model)"},
    outputs={"model": "SFT checkpoint (nano3-sft-model)"},
    examples=["nemotron nano3 sft -c tiny --dry-run", "nemotron nano3 sft --run dev optimizer.lr=1e-5"],
)


def sft(ctx: typer.Context) -> None:
    """Supervised fine-tuning of Nemotron 3 Nano with Megatron-Bridge (torchrun)."""
    job = compile_job(SPEC, parse_recipe_config(ctx))  # config + overrides + env.toml profile, with provenance
    if job.is_local:  # no profile, or executor = "local": torchrun, one process per GPU (run.env.local_nproc on CPU)
        raise typer.Exit(show_dry_run(job) if job.dry_run else run_local(job))
    # FORK POINT: from here on the job goes to Slurm through nemo-run; to launch it
    # elsewhere, replace these lines (docs/dev/architecture.md, "Forking a command").
    packager, plan = build_packager(job)  # profile `packager`, else the recipe's default
    slurm_job = prepare_job(job, packager, plan)  # SlurmExecutor + job dir; torchrun on every node (runspec launch)
    if job.dry_run:  # the exact sbatch script, rendered offline; nothing is sent
        raise typer.Exit(show_dry_run(job, slurm_job))
    submitted = submit(slurm_job, attached=job.attached)  # --batch returns; --run follows the log
    raise typer.Exit(submitted.exit_code or 0)
