"""`*.key=value` on `nano3 pipe`'s command line reaches every stage (docs/pipelines.md): it was
refused as a script argument ('unexpected arguments') while the docs and the pipe's help
told users to write it. A recipe command that is no pipe refuses it in one line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.nemotron_cli import NEMOTRON


def _cli(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    (tmp / "env.toml").write_text('[cluster]\nexecutor = "slurm"\naccount = "a"\npartition = "p"\n'
                                  'container_image = ""\ngpus_per_node = 0\n')
    env.update(NEMOTRON_HOME=str(tmp / "home"), NEMOTRON_ARTIFACTS_ROOT=str(tmp / "reg"),
               NEMOTRON_ENV_FILE=str(tmp / "env.toml"), COLUMNS="250", TERM="dumb")
    return subprocess.run([str(NEMOTRON), *args], cwd=tmp, env=env, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def test_a_star_override_sets_the_key_of_every_stage(tmp_path):
    proc = _cli(tmp_path, "nano3", "pipe", "-c", "tiny", "--batch", "cluster", "*.run.env.time=00:07:00",
                "--dry-run")
    assert proc.returncode == 0, proc.stderr[-2000:]
    scripts = proc.stdout.count("#SBATCH --time=00:07:00")
    stages = proc.stdout.count("#!/bin/bash")
    assert stages >= 6 and scripts == stages, (scripts, stages)


def test_a_recipe_command_that_is_no_pipe_refuses_it_in_one_line(tmp_path):
    proc = _cli(tmp_path, "nano3", "pretrain", "-c", "tiny", "*.fallback.max_steps=5", "--dry-run")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: malformed override '*.fallback.max_steps=5': invalid key '*.fallback.max_steps' "
        "(keys are dot-separated names like 'train.lr')"]
