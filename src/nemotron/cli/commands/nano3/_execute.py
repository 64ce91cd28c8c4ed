"""Execution shared by the nano3 commands: run a recipe script locally.

Remote modes (``--run``/``--batch``) are not wired to nemo-run yet; they raise
:class:`ExecutionError` so nothing half-submitted can happen.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from nemo_runspec.errors import ExecutionError
from nemo_runspec.recipe_config import RecipeConfig


def local_command(script_path: str, train_yaml: str, passthrough: list[str], nproc: int = 1) -> list[str]:
    """The command line that runs a recipe script on this machine.

    One process runs ``python script --config train.yaml ARGS``; with ``nproc > 1``
    it goes through ``torch.distributed.run --standalone``.
    """
    if nproc > 1:
        launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
    else:
        launcher = [sys.executable]
    return [*launcher, script_path, "--config", train_yaml, *passthrough]


def local_nproc(job_config: Any, launch: str) -> int:
    """Processes for a local run: ``run.env.local_nproc`` for torchrun, else 1.

    ``gpus_per_node`` is a cluster default and is not used locally, where there
    may be no GPU at all.
    """
    if launch != "torchrun":
        return 1
    try:
        value = job_config.run.env.get("local_nproc")
    except AttributeError:
        value = None
    return int(value) if value else 1


def run_local(spec: Any, job_config: Any, cfg: RecipeConfig) -> int:
    """Stage a job dir (job.yaml + train.yaml) and run the recipe script in it.

    Returns the script's exit code; prints where the job dir is.
    """
    from nemo_runspec.config import (
        extract_train_config,
        generate_job_dir,
        save_configs,
        staged_job_dir,
    )

    train_config = extract_train_config(job_config, for_remote=False)
    job_dir = generate_job_dir(spec.name)
    with staged_job_dir(job_dir) as staging:
        _, train_path = save_configs(job_config, train_config, staging)
    train_yaml = job_dir / train_path.name
    cmd = local_command(
        str(spec.script_path), str(train_yaml), cfg.passthrough,
        local_nproc(job_config, spec.run.launch),
    )
    print(f"job dir: {job_dir}", file=sys.stderr)
    env = dict(os.environ)
    env.setdefault("NEMOTRON_JOB_DIR", str(job_dir))
    try:
        return subprocess.call(cmd, cwd=job_dir, env=env)
    except OSError as exc:
        raise ExecutionError(f"could not start {cmd[0]}: {exc}") from exc


def execute(spec: Any, job_config: Any, cfg: RecipeConfig) -> None:
    """Run the compiled job: locally now; remote modes are not implemented yet."""
    import typer

    if cfg.mode == "local":
        code = run_local(spec, job_config, cfg)
        if code != 0:
            print(f"error: {spec.name} exited with code {code}", file=sys.stderr)
            raise typer.Exit(code)
        return
    raise ExecutionError(
        f"--{cfg.mode} {cfg.profile}: remote execution is not implemented yet",
        hint="use --dry-run to see the compiled job",
    )
