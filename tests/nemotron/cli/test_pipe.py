"""`nemotron nano3 pipe` offline: the dry run of the whole chain, stage selection, override errors.

The local chain and the Slurm chain run for real in tests/nemo_runspec/test_pipeline.py
(small recipes) and tests/e2e/test_pipe.py (the tiny nano3 chain on the cluster).
"""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
NEMOTRON = ROOT / ".venv" / "bin" / "nemotron"
SECRET = "hf_pipeSECRETvalue0123456789abcdef"


@pytest.fixture()
def sandbox(tmp_path: Path) -> dict:
    nhome, cwd = tmp_path / "nhome", tmp_path / "cwd"
    cwd.mkdir()
    env_toml = tmp_path / "env.toml"
    env_toml.write_text(textwrap.dedent(f"""
        [dev]
        executor = "slurm"
        account = "acct"
        partition = "batch"
        container_image = ""
        gpus_per_node = 0
        env_vars = {{ HF_TOKEN = "{SECRET}" }}
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(nhome), NEMOTRON_ENV_FILE=str(env_toml), NEMORUN_HOME=str(nhome / "nemorun"),
               NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "registry"), COLUMNS="200", TERM="dumb")
    return {"env": env, "cwd": cwd, "tmp": tmp_path, "nhome": nhome}


def nemotron(sb: dict, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), *args], cwd=sb["cwd"], env=sb["env"], text=True,
                          capture_output=True, timeout=300, stdin=subprocess.DEVNULL)


def test_slurm_dry_run_shows_every_script_and_the_graph_and_touches_nothing(sandbox):
    proc = nemotron(sandbox, "nano3", "pipe", "-c", "tiny", "--dry-run", "--batch", "dev")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert len(re.findall(r"^#!/bin/bash", out, re.M)) >= 6  # one sbatch script per stage
    assert "#SBATCH --dependency='afterok:<prep-sft>:<pretrain>'" in out
    assert out.count("#SBATCH --kill-on-invalid-dep=yes") == 4  # the three trained stages and eval wait
    graph = out[out.index("dependency graph"):]
    assert "sft <- prep-sft, pretrain -> nano3-sft-model-tiny" in graph
    assert "eval <- prep-pretrain, rl, prep-rl -> nano3-eval-tiny" in graph
    assert SECRET not in out + proc.stderr
    assert not sandbox["nhome"].exists() and list(sandbox["cwd"].iterdir()) == []


def test_stage_selection_and_local_dry_run(sandbox):
    proc = nemotron(sandbox, "nano3", "pipe", "-c", "tiny", "--stages", "pretrain:sft", "--dry-run")
    assert proc.returncode == 0, proc.stderr[-2000:]
    stages = re.findall(r"stage \d/(\d): (\S+)", proc.stdout)
    assert [name for _, name in stages] == ["pretrain", "prep-sft", "sft"] and stages[0][0] == "3"
    assert "Local command" in proc.stdout


@pytest.mark.parametrize(("args", "words"), [
    (["pretrian.train.train_iters=3"], "did you mean 'pretrain'"),
    (["lr=3"], "names no stage"),
    (["--stages", "sft:evall"], "no stage 'evall'"),
    (["pretrain.train.trian_iters=3"], "stage pretrain:"),
])
def test_bad_input_is_one_line(sandbox, args, words):
    proc = nemotron(sandbox, "nano3", "pipe", "-c", "tiny", "--dry-run", *args)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and words in lines[0], proc.stderr


# --- the sbatch launcher (one allocation) -------------------------------------------------


def test_sbatch_launcher_dry_run_shows_one_allocation_that_runs_every_stage_in_order(sandbox):
    with open(sandbox["env"]["NEMOTRON_ENV_FILE"], "a") as f:
        f.write('time = "00:20:00"\n')
    proc = nemotron(sandbox, "nano3", "pipe", "-c", "tiny", "--dry-run", "--batch", "dev", "--launcher", "sbatch")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    driver = out[out.index("one allocation (--launcher sbatch)"):]
    stages = out[:out.index("one allocation (--launcher sbatch)")]
    # the stages are staged as they are, with no chain between them
    assert "--dependency" not in stages and "--kill-on-invalid-dep" not in stages
    # the driver: 7 stages of 20 minutes, the shared allocation lines, the stages in order
    assert "#SBATCH --time=02:20:00" in driver
    assert "#SBATCH --account=acct" in driver and "#SBATCH --nodes=1" in driver
    run_lines = re.findall(r"^run_stage (\S+) (\S+) (\S+) \|\|", driver, re.M)
    assert [name for name, _, _ in run_lines] == ["prep-pretrain", "pretrain", "prep-sft", "sft",
                                                  "prep-rl", "rl", "eval"]
    for _, script, _log in run_lines:  # each is the staged script the dry run above showed
        assert script.endswith("_sbatch.sh")
    assert SECRET not in out + proc.stderr
    assert not sandbox["nhome"].exists()


@pytest.mark.parametrize(("args", "words"), [
    (["--launcher", "sbatc", "--batch", "dev"], "did you mean 'sbatch'"),
    (["--launcher", "sbatch"], "needs a Slurm profile"),
    (["--launcher", "sbatch", "--batch", "dev", "pretrain.run.env.nodes=2"],
     "stage pretrain asks for --nodes=2 but stage prep-pretrain for --nodes=1"),
])
def test_sbatch_launcher_bad_input_is_one_line(sandbox, args, words):
    proc = nemotron(sandbox, "nano3", "pipe", "-c", "tiny", "--dry-run", *args)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and words in lines[0], proc.stderr
