"""A failed submission says what failed, where, and what to do: sbatch missing, the
controller unreachable, a full disk where Slurm writes, and a real rejection by the
cluster are four different one-line errors, and nothing is left behind.

The first three are a stand-in ``sbatch`` on PATH that fails the way the real one
does; the rejection is the real cluster's (a partition it does not have).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.nemotron_cli import NEMOTRON

from .helpers import cli_env

pytestmark = [pytest.mark.slurm]



@pytest.fixture
def sandbox(tmp_path: Path, slurm_cluster) -> dict:
    (tmp_path / "bin").mkdir()
    env = cli_env(tmp_path, slurm_cluster, f"""
        batch_partition = "{slurm_cluster.default_partition}"
        env_vars = {{ HF_TOKEN = "submitMessagesSECRET0123456789" }}
    """, PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    return {"tmp": tmp_path, "env": env, "bin": tmp_path / "bin", "home": tmp_path / "home"}


def fake_sbatch(sb: dict, stderr: str, code: int) -> None:
    path = sb["bin"] / "sbatch"
    path.write_text(f"#!/bin/sh\necho '{stderr}' >&2\nexit {code}\n")
    path.chmod(0o755)


def submit(sb: dict, *over: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), "nano3", "data", "prep", "pretrain", "-c", "tiny", "--batch", "cluster",
                           *over], env=sb["env"], cwd=sb["tmp"], capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL)


def one_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


def nothing_left(sb: dict) -> None:
    exp = sb["home"] / "jobs" / "experiments"
    assert not exp.exists() or not [p for p in exp.rglob("*") if p.is_file()], list(exp.rglob("*"))


@pytest.mark.parametrize(("stderr", "code", "words", "not_words"), [
    ("sh: 1: sbatch: not found", 127, "sbatch is not installed here", "Slurm rejected"),
    ("sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)", 1,
     "could not reach the Slurm controller here", "Slurm rejected"),
    ("sbatch: error: Batch job submission failed: No space left on device", 1,
     "free space (or quota) where Slurm writes", "check partition"),
], ids=["missing", "controller-down", "disk-full"])
def test_local_failures_say_what_failed(sandbox, stderr, code, words, not_words):
    fake_sbatch(sandbox, stderr, code)
    line = one_error(submit(sandbox))
    assert words in line and not_words not in line, line
    nothing_left(sandbox)


def test_a_real_rejection_names_slurms_reason(sandbox):
    line = one_error(submit(sandbox, "run.env.batch_partition=nosuchpart"))
    assert "Slurm rejected job" in line and "invalid partition" in line.lower(), line
    nothing_left(sandbox)
