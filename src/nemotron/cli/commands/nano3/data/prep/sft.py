"""`nemotron nano3 data prep sft`: Prepare the sft data for Nemotron 3 Nano (Ray).

The execution is visible here, step by step: load the config, compile the job,
then run it locally or build the packager and the nemo-run executor and submit.
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
        "nemotron nano3 data prep sft --run dev num_shards=16 sample=1000",
    ],
    description="Prepare the sft data for Nemotron 3 Nano (Ray).",
)


def _execute_sft(cfg: RecipeConfig) -> None:
    """Compile the data prep sft job from the command line, then show, run or submit it."""
    from nemo_runspec.config import build_job_config, extract_train_config, parse_config
    from nemo_runspec.config.jobdir import render_configs
    from nemo_runspec.config.resolvers import describe_references
    from nemo_runspec.display import display_dry_run
    from nemo_runspec.env import parse_env
    from nemo_runspec.execution import (
        build_env_vars,
        code_env,
        execute_local,
        job_env,
        local_preview,
    )

    # 1. Config: -c NAME|PATH (or the runspec default) + overrides, the env.toml
    #    profile (None without --run/--batch), and the compiled job config.
    train_config = parse_config(cfg.ctx, SPEC.config_dir, SPEC.config.default)
    env = parse_env(cfg.ctx)
    job_config = build_job_config(
        train_config, cfg.ctx, SPEC.name, SPEC.script_path, cfg.argv, env_profile=env, runspec=SPEC
    )
    run_env = job_env(job_config)  # runspec < YAML run.env < profile < CLI run.env.*
    artifacts = describe_references(job_config) if cfg.dry_run else None

    # 2. No profile, or executor = "local": run here (torchrun; one process per GPU,
    #    or run.env.local_nproc on CPU), in a staged job dir.
    if run_env.get("executor", "local") == "local":
        if cfg.dry_run:
            display_dry_run(job_config, train_config, env_profile=env, artifacts=artifacts,
                            commands=[local_preview(SPEC, job_config, cfg.passthrough)])
            return
        raise typer.Exit(execute_local(SPEC, job_config, passthrough=cfg.passthrough))

    # 3. Slurm: package the code, split env vars from secrets, build the executor.
    from nemo_runspec.packaging import build_packager, console_progress
    from nemo_runspec.slurm import prepare_job, render_sbatch, submit

    packager, plan = build_packager(run_env, runspec=SPEC, script_path=SPEC.script_path,
                                    sources=getattr(env, "sources", None), progress=console_progress())
    env_vars, secrets = build_env_vars(job_config, run_env, runspec=SPEC)
    job = prepare_job(
        env=run_env, mode=cfg.mode, runspec=SPEC, packager=packager, script=plan.script,
        args=["--config", "/nemo_run/train.yaml", *cfg.passthrough],
        env_vars={**env_vars, **code_env(plan)}, secrets=secrets,
    )
    job.files = render_configs(job_config, extract_train_config(job_config, for_remote=True))

    # 4. --dry-run shows the exact sbatch script (offline); otherwise submit,
    #    and with --run follow the job and exit with its exit code.
    if cfg.dry_run:
        display_dry_run(job_config, train_config, env_profile=env, artifacts=artifacts,
                        scripts={"sbatch script": render_sbatch(job)})
        return
    sub = submit(job, attached=cfg.attached)
    plan.write_json(job.local_exp_dir / job.name / "packaging.json")
    if cfg.attached:
        raise typer.Exit(sub.exit_code or 0)


def sft(ctx: typer.Context) -> None:
    """Prepare the sft data for Nemotron 3 Nano (Ray)."""
    _execute_sft(parse_recipe_config(ctx))
