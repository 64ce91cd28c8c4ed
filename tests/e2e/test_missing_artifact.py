"""A first `--run` on a new machine: with a fresh NEMOTRON_HOME (nothing published, the
registry's directory not even made yet) a stage whose input artifact is missing is
refused before anything reaches Slurm, with the artifact error on one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import cli_env

pytestmark = [pytest.mark.slurm]

NEMOTRON = Path(sys.executable).with_name("nemotron")


def test_fresh_home_run_is_refused_before_submission(tmp_path, slurm_cluster):
    # sbatch on PATH records every call, then is the real one
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = subprocess.run(["sh", "-c", "command -v sbatch"], capture_output=True, text=True).stdout.strip()
    calls = tmp_path / "sbatch-calls"
    (bin_dir / "sbatch").write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec {real} "$@"\n')
    (bin_dir / "sbatch").chmod(0o755)
    home = tmp_path / "new-user" / "nemotron-home"  # neither it nor its parent exists
    env = cli_env(tmp_path, slurm_cluster, NEMOTRON_HOME=str(home), PATH=f"{bin_dir}:{os.environ['PATH']}")
    env.pop("NEMOTRON_ARTIFACTS_ROOT")  # the default registry: $NEMOTRON_HOME/artifacts

    proc = subprocess.run([str(NEMOTRON), "nano3", "pretrain", "-c", "tiny", "--run", "cluster"], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "nano3-pretrain-data-tiny:latest" in errors[0] and "does not resolve" in errors[0]
    assert str(home / "artifacts") in errors[0]  # which registry was looked in
    assert not calls.exists(), calls.read_text()  # nothing was submitted
    assert not (home / "jobs").exists() or not any((home / "jobs").rglob("*.sbatch"))
