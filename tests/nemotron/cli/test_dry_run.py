"""--dry-run: content, redaction and absence of side effects; local runs."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.nemotron_cli import NEMOTRON

ROOT = Path(__file__).resolve().parents[3]
SECRET = "hf_secretvalue1234567890abcdefXYZ"
WANDB_SECRET = "wandbsecret-0123456789"


def _snapshot(*dirs: Path) -> dict[str, list[str]]:
    return {str(d): sorted(str(p.relative_to(d)) for p in d.rglob("*")) for d in dirs}


@pytest.fixture()
def sandbox(tmp_path: Path):
    """Empty HOME, NEMOTRON_HOME, cwd and TMPDIR; an env.toml with secrets elsewhere."""
    home, nhome, cwd, tmp = (tmp_path / n for n in ("home", "nhome", "cwd", "tmp"))
    for d in (home, nhome, cwd, tmp):
        d.mkdir()
    cfgdir = tmp_path / "conf"
    cfgdir.mkdir()
    env_toml = cfgdir / "env.toml"
    env_toml.write_text(textwrap.dedent(f"""
        [base]
        executor = "slurm"
        account = "acct"
        partition = "batch"

        [dev]
        extends = "base"
        nodes = 2
        env_vars = {{ HF_TOKEN = "{SECRET}", WANDB_API_KEY = "{WANDB_SECRET}", PLAIN = "visible" }}
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(HOME=str(home), NEMOTRON_HOME=str(nhome), TMPDIR=str(tmp), COLUMNS="200",
               NEMORUN_HOME=str(nhome / "nemorun"))
    return {"home": home, "nhome": nhome, "cwd": cwd, "tmp": tmp, "env": env, "env_toml": env_toml}


def _nemotron(sandbox, *args, timeout=120):
    return subprocess.run([str(NEMOTRON), *args], cwd=sandbox["cwd"], env=sandbox["env"],
                          capture_output=True, text=True, timeout=timeout)


_LATER_SECTIONS = ("Artifacts (", "sbatch script", "Local command")


def _section(output: str, start: str, end: str | None) -> dict:
    body = output[output.index(start):]
    body = body.split("\n", 1)[1]
    ends = [body.index(m) for m in ((end,) if end else _LATER_SECTIONS) if m in body]
    if ends:
        body = body[: min(ends)]
    return yaml.safe_load(body)


def test_dry_run_shows_job_and_has_no_side_effects(sandbox):
    watched = (sandbox["home"], sandbox["nhome"], sandbox["cwd"], sandbox["tmp"])
    before = _snapshot(*watched)
    proc = _nemotron(sandbox, "nano3", "pretrain", "--run", "dev", "-c", "tiny", "--dry-run",
                     f"--env-file={sandbox['env_toml']}", "train.train_iters=11", "run.env.nodes=4",
                     "--", "--my-flag", "x=1")
    assert proc.returncode == 0, proc.stderr
    assert _snapshot(*watched) == before
    out = proc.stdout
    assert "Dry run" in out
    assert "nano3/pretrain" in out and str(sandbox["env_toml"]) in out
    job = _section(out, "Job config (job.yaml)", "Train config (train.yaml")
    train = _section(out, "Train config (train.yaml", None)
    assert job["run"]["mode"] == "run" and job["run"]["profile"] == "dev"
    assert job["run"]["env"]["nodes"] == 4  # CLI beats the profile's 2
    assert job["run"]["env"]["partition"] == "batch"  # inherited via extends
    assert job["run"]["cli"]["passthrough"] == ["--my-flag", "x=1"]
    assert train["train"]["train_iters"] == 11
    assert train["model"]["seq_length"] == 512  # from tiny.yaml, over default.yaml's 8192
    # the run.env table shows each key with where it came from
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") >= 3}
    assert "partition" in rows and "env.toml" in rows["partition"]
    assert "command line" in rows["nodes"] and "4" in rows["nodes"]
    assert "runspec" in rows["gpus_per_node"]


def test_dry_run_redacts_secrets(sandbox):
    proc = _nemotron(sandbox, "nano3", "sft", "-d", "--batch=dev", "--env-file", str(sandbox["env_toml"]))
    assert proc.returncode == 0, proc.stderr
    both = proc.stdout + proc.stderr
    assert SECRET not in both and WANDB_SECRET not in both
    assert "HF_TOKEN" in both and "visible" in both
    job = _section(proc.stdout, "Job config (job.yaml)", "Train config (train.yaml")
    assert job["run"]["mode"] == "batch"


def test_dry_run_secret_given_as_override_is_redacted(sandbox):
    proc = _nemotron(sandbox, "nano3", "pretrain", "-d", "+logger.wandb_api_key=" + WANDB_SECRET)
    assert proc.returncode == 0, proc.stderr
    assert WANDB_SECRET not in proc.stdout + proc.stderr


@pytest.mark.parametrize("cmd", [["nano3", "pretrain"], ["nano3", "sft"], ["nano3", "rl"]])
def test_dry_run_local_every_training_recipe(sandbox, cmd):
    proc = _nemotron(sandbox, *cmd, "-c", "tiny", "-d")
    assert proc.returncode == 0, proc.stderr
    job = _section(proc.stdout, "Job config (job.yaml)", "Train config (train.yaml")
    assert job["run"]["mode"] == "local" and job["run"]["recipe"]["name"] == "nano3/" + cmd[1]
    assert Path(job["run"]["recipe"]["script"]).is_file()


def test_dry_run_with_config_path_from_other_cwd(sandbox, tmp_path):
    default = ROOT / "src/nemotron/recipes/nano3/stage0_pretrain/config/default.yaml"
    data = yaml.safe_load(default.read_text())
    data["train"]["train_iters"] = 3
    own = tmp_path / "mine.yaml"
    own.write_text(yaml.safe_dump(data))
    # relative to the cwd, the way a user types it
    (sandbox["cwd"] / "rel.yaml").write_text(own.read_text())
    for config in (str(own), "rel.yaml"):
        proc = _nemotron(sandbox, "nano3", "pretrain", "-d", "-c", config)
        assert proc.returncode == 0, proc.stderr
        train = _section(proc.stdout, "Train config (train.yaml", None)
        assert train["train"]["train_iters"] == 3


def test_unknown_override_key_is_error(sandbox):
    proc = _nemotron(sandbox, "nano3", "pretrain", "-d", "train.trian_iters=3")
    assert proc.returncode == 2
    assert "error:" in proc.stderr and "train_iters" in proc.stderr and "Traceback" not in proc.stderr


def test_local_run_stages_job_dir_and_runs_script(sandbox):
    """A local run stages job.yaml/train.yaml in a job dir and runs the script there."""
    proc = _nemotron(sandbox, "kit", "preflight", "preflight.timeout_s=77", "--", "--timeout", "60")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "preflight passed: 1 rank(s)" in proc.stdout
    train_yamls = list(sandbox["nhome"].rglob("train.yaml"))
    assert len(train_yamls) == 1
    job_dir = train_yamls[0].parent
    assert (job_dir / "job.yaml").is_file()
    assert yaml.safe_load(train_yamls[0].read_text())["preflight"]["timeout_s"] == 77
    assert (job_dir / "preflight.json").is_file()  # the script ran with the job dir as cwd
    assert str(job_dir) in proc.stderr  # "job dir: ..." is printed


def test_local_run_failure_is_the_scripts_exit_code(sandbox):
    proc = _nemotron(sandbox, "kit", "preflight", "preflight.require_env=[NEMOTRON_T_ABSENT]")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "NEMOTRON_T_ABSENT is not set" in proc.stdout
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("override", [[], ["run.env.gpus_per_node=0"]], ids=["profile", "override"])
def test_cpu_profile_keeps_its_process_count(sandbox, override):
    """docs/execution.md: on a CPU cluster (gpus_per_node = 0) torchrun starts nproc_per_node
    processes per node, whether the 0 comes from the profile or from run.env.gpus_per_node=0."""
    sandbox["env_toml"].write_text(sandbox["env_toml"].read_text() + textwrap.dedent("""
        [cpu]
        extends = "base"
        container_image = ""
        gpus_per_node = 0
        nproc_per_node = 2
    """))
    env = dict(sandbox["env"], NEMOTRON_ENV_FILE=str(sandbox["env_toml"]), COLUMNS="400")
    proc = subprocess.run([str(NEMOTRON), "kit", "preflight", "--batch", "cpu", "--dry-run", *override],
                          cwd=sandbox["cwd"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    script = proc.stdout[proc.stdout.index("#!/bin/bash"):]
    assert "--nproc-per-node 2 " in script, script[-1500:]
    assert "--gpus-per-node" not in script and "gres=gpu" not in script
