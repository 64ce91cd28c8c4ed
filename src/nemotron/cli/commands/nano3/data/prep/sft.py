"""`nemotron nano3 data prep sft`: Prepare the sft data for Nemotron 3 Nano (Ray).

Execution is visible here: load config, read the env profile, compile the job,
then show it (`--dry-run`) or run it.
"""

from __future__ import annotations

import typer

from nemo_runspec import parse as parse_runspec
from nemo_runspec.recipe_config import RecipeConfig, parse_recipe_config
from nemo_runspec.recipe_typer import RecipeMeta
from nemotron.recipes import RECIPES_DIR

SCRIPT_PATH = RECIPES_DIR / "nano3/stage1_sft/data_prep.py"
SPEC = parse_runspec(SCRIPT_PATH)

META = RecipeMeta(
    name=SPEC.name,
    script_path=SPEC.script_path,
    config_dir=SPEC.config_dir,
    default_config=SPEC.config.default,
    input_artifacts={"raw": "raw JSONL/Parquet files (input.paths)", "tokenizer": "tokenizer.json (tokenizer.path)"},
    output_artifacts={"data": "prepared sft data (run.output, e.g. nano3-sft-data:latest)"},
    examples=[
        "nemotron nano3 data prep sft -c tiny --dry-run",
        "nemotron nano3 data prep sft --run dev output.num_shards=16",
    ],
    description="Prepare the sft data for Nemotron 3 Nano (Ray).",
)


def _execute_sft(cfg: RecipeConfig) -> None:
    """Compile the sft job from the command line and show or run it."""
    from nemo_runspec.config import build_job_config, parse_config
    from nemo_runspec.display import display_dry_run
    from nemo_runspec.env import parse_env
    from nemotron.cli.commands.nano3._execute import execute

    # 1. Train config: -c NAME|PATH (or the runspec default) + overrides.
    train_config = parse_config(cfg.ctx, SPEC.config_dir, SPEC.config.default)
    # 2. Env profile from env.toml (None without --run/--batch).
    env = parse_env(cfg.ctx)
    # 3. Job config: train config + run: section (env, provenance, CLI).
    job_config = build_job_config(
        train_config, cfg.ctx, SPEC.name, SPEC.script_path, cfg.argv, env_profile=env, runspec=SPEC
    )
    # 4. Dry run: show everything, touch nothing.
    if cfg.dry_run:
        display_dry_run(job_config, train_config, env_profile=env)
        return
    # 5. Execute (local subprocess now; Slurm/Ray submission later).
    execute(SPEC, job_config, cfg)


def sft(ctx: typer.Context) -> None:
    """Prepare the sft data for Nemotron 3 Nano (Ray)."""
    _execute_sft(parse_recipe_config(ctx))
