"""`nemotron steps list|show|run` through the real console script, offline."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.nemotron_cli import NEMOTRON

ROOT = Path(__file__).resolve().parents[4]
STEPS = {"nano3/prep-pretrain": "ray", "nano3/pretrain": "torchrun", "nano3/prep-sft": "ray",
         "nano3/sft": "torchrun", "nano3/convert": "direct", "nano3/prep-rl": "ray", "nano3/rl": "ray", "nano3/eval": "direct"}


@pytest.fixture()
def sandbox(tmp_path: Path) -> dict:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (tmp_path / "env.toml").write_text("# no profiles: everything runs here\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "nhome"), NEMOTRON_ENV_FILE=str(tmp_path / "env.toml"),
               NEMORUN_HOME=str(tmp_path / "nemorun"), NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "registry"),
               COLUMNS="200", TERM="dumb")
    return {"env": env, "cwd": cwd, "tmp": tmp_path}


def nemotron(sb: dict, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), *args], cwd=sb["cwd"], env=sb["env"], text=True,
                          capture_output=True, timeout=300, stdin=subprocess.DEVNULL)


def test_list_shows_every_step_with_its_launch_type(sandbox):
    proc = nemotron(sandbox, "steps", "list")
    assert proc.returncode == 0, proc.stderr
    rows = {ln.split()[0]: ln.split() for ln in proc.stdout.splitlines()[1:] if ln.strip()}
    assert {name: row[2] for name, row in rows.items()} == STEPS
    assert rows["nano3/sft"][1] == "nano3/sft" and rows["nano3/prep-rl"][1] == "nano3/data/prep/rl"


def test_show_names_what_a_step_consumes_and_publishes(sandbox):
    proc = nemotron(sandbox, "steps", "show", "nano3/sft", "-c", "tiny")
    assert proc.returncode == 0, proc.stderr
    fields = dict(re.match(r"(\S+)\s+(.*)", ln).groups() for ln in proc.stdout.splitlines() if ln.strip())
    assert fields["launch"] == "torchrun" and fields["config"] == "tiny"
    assert fields["script"].endswith("nano3/stage1_sft/train.py")
    assert fields["consumes"] == "data=nano3-sft-data-tiny:latest, model=nano3-pretrain-model-tiny:latest"
    assert fields["publishes"] == "nano3-sft-model-tiny"
    # an override reaches what is shown
    proc = nemotron(sandbox, "steps", "show", "nano3/sft", "-c", "tiny", "run.model=nano3-pretrain-model-tiny:v3")
    assert "model=nano3-pretrain-model-tiny:v3" in proc.stdout, proc.stderr


def test_run_dry_run_applies_an_override_without_a_stage_prefix(sandbox):
    proc = nemotron(sandbox, "steps", "run", "nano3/pretrain", "-c", "tiny", "--dry-run", "fallback.max_steps=3")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "stage 1/1: pretrain (nano3/pretrain)" in out
    train = yaml.safe_load(out[out.index("Train config (train.yaml"):].split("\n", 1)[1].split("Artifacts (")[0])
    assert train["fallback"]["max_steps"] == 3
    assert "pretrain -> nano3-pretrain-model-tiny" in out[out.index("dependency graph"):]
    assert not (sandbox["tmp"] / "nhome").exists() and list(sandbox["cwd"].iterdir()) == []


@pytest.mark.parametrize(("args", "words"), [
    (["show", "nano3/sfft", "-c", "tiny"], "no step 'nano3/sfft' (did you mean 'nano3/sft'?)"),
    (["run", "nano3/pretrian", "-c", "tiny", "--dry-run"], "did you mean 'nano3/pretrain'"),
    (["run", "sft", "-c", "tiny", "--dry-run"], "did you mean 'nano3/sft'"),
    (["run", "nano3/pretrain", "-c", "tiny", "--dry-run", "fallback.max_stpes=3"], "max_stpes"),
])
def test_a_misspelled_step_or_key_is_one_line(sandbox, args, words):
    proc = nemotron(sandbox, "steps", *args)
    assert proc.returncode == 2, proc.stdout[-1000:] + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and words in lines[0], proc.stderr


def test_help_lists_the_global_options(sandbox):
    for command in (["steps", "run"], ["nano3", "pipe"]):
        out = nemotron(sandbox, *command, "--help").stdout
        assert "Global options" in out, command
        for flag in ("-c, --config", "-r, --run", "-b, --batch", "-d, --dry-run"):
            assert flag in out, (command, flag)
    assert "[GLOBAL OPTIONS]" in nemotron(sandbox, "nano3", "pipe", "--help").stdout
    nano3 = nemotron(sandbox, "nano3", "--help").stdout
    assert "recipes: data prep, pretrain, sft, convert, rl, evaluation, model import and the whole chain (pipe)" in nano3
    listed = [ln for ln in nemotron(sandbox, "--help").stdout.splitlines() if " nano3 " in ln]
    assert listed and "evaluation" in listed[0]
