"""A secret passed as a script argument (`-- HF_TOKEN=...`) is never shown or written:
the local dry run masks it, and a Slurm job refuses it (the sbatch script and Slurm's
job record would hold it) with one line saying how to pass it instead."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.nemotron_cli import NEMOTRON

ROOT = Path(__file__).resolve().parents[3]
SECRET = "hfsecretvalue99"


@pytest.fixture()
def sandbox(tmp_path: Path) -> dict:
    env_toml = tmp_path / "env.toml"
    env_toml.write_text(textwrap.dedent("""
        [dev]
        executor = "slurm"
        account = "acct"
        partition = "batch"
        container_image = ""
        gpus_per_node = 0
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), NEMOTRON_ENV_FILE=str(env_toml), COLUMNS="200",
               NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "registry"), TERM="dumb")
    return {"env": env, "cwd": tmp_path}


def nemotron(sb: dict, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), *args], cwd=sb["cwd"], env=sb["env"], text=True,
                          capture_output=True, timeout=300, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("args", [[f"HF_TOKEN={SECRET}"], ["--api-key", SECRET], [f"--password={SECRET}"]])
def test_a_slurm_job_refuses_a_secret_script_argument(sandbox, args):
    proc = nemotron(sandbox, "nano3", "data", "prep", "pretrain", "-c", "tiny", "--batch", "dev", "--dry-run",
                    "--", *args)
    assert proc.returncode == 2, proc.stdout[-1000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "is a secret" in lines[0] and "env_vars" in lines[0], proc.stderr
    assert SECRET not in proc.stdout + proc.stderr


def test_the_local_dry_run_masks_it(sandbox):
    proc = nemotron(sandbox, "nano3", "data", "prep", "pretrain", "-c", "tiny", "--dry-run",
                    "--", f"HF_TOKEN={SECRET}", "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stdout + proc.stderr
    assert "HF_TOKEN=***REDACTED***" in proc.stdout and "--seed 3" in proc.stdout


TWO_WORD = [["--api-key", SECRET], ["--password", SECRET]]


@pytest.mark.parametrize("args", TWO_WORD)
def test_the_local_dry_run_masks_a_two_word_secret_everywhere(sandbox, args):
    """Header ("script args"), job config and the "Local command" line: nowhere in clear."""
    proc = nemotron(sandbox, "nano3", "data", "prep", "pretrain", "-c", "tiny", "--dry-run",
                    "--", *args, "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stdout + proc.stderr
    assert f"{args[0]} ***REDACTED***" in proc.stdout and "--seed 3" in proc.stdout


@pytest.mark.parametrize("args", TWO_WORD)
def test_a_local_run_never_saves_a_two_word_secret(sandbox, args):
    """The job dir a local run stages (job.yaml, train.yaml) holds no secret argument.
    (The script still receives it: preflight's own argparse refuses it, which is its output.)"""
    proc = nemotron(sandbox, "kit", "preflight", "--", "--timeout", "60", *args)
    saved = list((sandbox["cwd"] / "home").rglob("job.yaml"))
    assert len(saved) == 1, proc.stdout + proc.stderr
    for path in saved[0].parent.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path
    assert "***REDACTED***" in saved[0].read_text()  # the passthrough list keeps its place
