"""execute(..., experiment=exp): a recipe's task added to a caller's real nemo-run
Experiment, which the caller runs (LocalExecutor) or previews (SlurmExecutor dryrun)."""

from __future__ import annotations

import os
import stat
import subprocess
import textwrap
from pathlib import Path

import pytest

from nemo_runspec import parse
from nemo_runspec.cli.execute import execute_recipe
from nemo_runspec.job.run_config import RunConfig

SECRET = "hf_composeSECRET0123456789abcdef"
SCRIPT = """\
# /// script
# [tool.runspec]
# schema = "1"
# name = "team/hello"
# [tool.runspec.run]
# launch = "direct"
# [tool.runspec.resources]
# nodes = 1
# gpus_per_node = 0
# ///
import json, os, sys
from pathlib import Path
path = Path(sys.argv[sys.argv.index("--config") + 1])
cfg = path.read_text()
(path.parent / "out.json").write_text(json.dumps({
    "config": cfg, "args": sys.argv[3:], "token": os.environ.get("HF_TOKEN"),
    "cwd": os.getcwd()}))
"""


@pytest.fixture
def recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "recipe" / "config").mkdir(parents=True)
    (tmp_path / "recipe" / "config" / "default.yaml").write_text("greeting: hi\n")
    (tmp_path / "recipe" / "hello.py").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NEMOTRON_ENV_FILE", raising=False)
    return parse(tmp_path / "recipe" / "hello.py")


def _files_containing(root: Path, text: str) -> list[Path]:
    """Files under ``root`` holding ``text``, but the script's own report (out.json)."""
    return [p for p in root.rglob("*")
            if p.is_file() and p.name != "out.json" and text.encode() in p.read_bytes()]


def test_local_task_runs_when_the_caller_runs_the_experiment(recipe, tmp_path: Path) -> None:
    import nemo_run as run

    (tmp_path / "env.toml").write_text(f'[here]\nexecutor = "local"\nenv_vars = {{ HF_TOKEN = "{SECRET}" }}\n')
    with run.Experiment("pipe", base_dir=str(tmp_path / "exps")) as exp:
        first = execute_recipe(recipe, RunConfig(profile="here", overrides=["greeting=yo"], passthrough=["--a"]),
                               experiment=exp)
        second = execute_recipe(recipe, RunConfig(profile="here"), experiment=exp)
        assert (first, second) == ("team-hello", "team-hello-2")
        assert not Path(exp._exp_dir, "team-hello").exists()  # nothing ran or was written yet
        exp.run(sequential=True)
    out = Path(exp._exp_dir, "team-hello", "out.json")
    import json

    data = json.loads(out.read_text())
    assert "greeting: yo" in data["config"] and data["args"] == ["--a"]
    assert data["token"] == SECRET and data["cwd"] == str(out.parent)
    assert Path(exp._exp_dir, "team-hello-2", "out.json").is_file()
    assert _files_containing(tmp_path / "exps", SECRET) == []  # delivered through a deleted 0600 file


def test_local_task_honours_run_setup_and_cmd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A composed local task starts like a direct local run: ``run.setup`` sourced first (what
    it exports reaches the script), then ``run.cmd`` with its placeholders filled in."""
    import json

    import nemo_run as run

    script = SCRIPT.replace('# launch = "direct"\n', '# launch = "direct"\n'
                            '# setup = "export GREETING=hello"\n'
                            '# cmd = "python {script} --config {config} --tag x {args}"\n')
    script = script.replace('"cwd": os.getcwd()}', '"cwd": os.getcwd(), "greeting": os.environ.get("GREETING")}')
    (tmp_path / "recipe" / "config").mkdir(parents=True)
    (tmp_path / "recipe" / "config" / "default.yaml").write_text("greeting: hi\n")
    (tmp_path / "recipe" / "hello.py").write_text(script)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NEMOTRON_ENV_FILE", raising=False)
    spec = parse(tmp_path / "recipe" / "hello.py")
    with run.Experiment("pipe", base_dir=str(tmp_path / "exps")) as exp:
        execute_recipe(spec, RunConfig(passthrough=["--a"]), experiment=exp)
        exp.run(sequential=True)
    data = json.loads(Path(exp._exp_dir, "team-hello", "out.json").read_text())
    assert data["greeting"] == "hello"
    assert data["args"] == ["--tag", "x", "--a"]


def test_dry_run_adds_nothing(recipe, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import nemo_run as run

    with run.Experiment("pipe", base_dir=str(tmp_path / "exps")) as exp:
        assert execute_recipe(recipe, RunConfig(dry_run=True), experiment=exp) is None
        assert exp.jobs == [] and "Dry run" in capsys.readouterr().out


def test_dependencies_without_an_experiment_are_refused(recipe) -> None:
    """Task ids of an experiment mean nothing for a job on its own: refused before anything runs."""
    from nemo_runspec.errors import ExecutionError

    with pytest.raises(ExecutionError, match="no experiment= was given") as info:
        execute_recipe(recipe, RunConfig(), dependencies=["nano3-data-prep"])
    assert info.value.key == "dependencies" and "experiment=exp" in (info.value.hint or "")


def test_not_an_experiment_is_a_one_line_error(recipe) -> None:
    from nemo_runspec.errors import ExecutionError

    with pytest.raises(ExecutionError, match="must be a nemo_run.Experiment, got dict"):
        execute_recipe(recipe, RunConfig(), experiment={})


def _sinfo_ok() -> bool:
    try:
        return subprocess.run(["sinfo", "-h"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.slurm
@pytest.mark.skipif(not _sinfo_ok(), reason="no Slurm cluster here (scripts/slurm-cluster.sh up)")
def test_slurm_task_in_the_callers_experiment_dryrun_and_run(recipe, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import nemo_run as run

    devnull = open(os.devnull)  # noqa: SIM115 - invoke's threads read stdin; pytest's refuses
    monkeypatch.setattr(sys, "stdin", devnull)

    (tmp_path / "env.toml").write_text(textwrap.dedent(f"""
        [cluster]
        executor = "slurm"
        account = "testacct"
        partition = "debug"
        container_image = ""
        gpus_per_node = 0
        time = "00:05:00"
        env_vars = {{ HF_TOKEN = "{SECRET}" }}
    """))
    # nemo-run's dryrun: the exact script of the task as added, without submitting
    with run.Experiment("pipe", base_dir=str(tmp_path / "exps")) as exp:
        task = execute_recipe(recipe, RunConfig(profile="cluster", detach=True, overrides=["greeting=yo"]),
                              experiment=exp)
        assert task == "team-hello"
        exp.dryrun(log=False, delete_exp_dir=False)
    sbatch = Path(exp._exp_dir, "team-hello_sbatch.sh").read_text()
    job_dir = os.path.join(exp._exp_dir, "team-hello")
    assert "#SBATCH --account=testacct" in sbatch and "#SBATCH --partition=debug" in sbatch
    assert f"cat > {job_dir}/train.yaml" in sbatch and "greeting: yo" in sbatch
    assert "--config" in sbatch and SECRET not in sbatch
    secret_files = list((tmp_path / "exps" / "experiments" / "team-hello").rglob(".nemotron-secrets.env"))
    assert len(secret_files) == 1 and stat.S_IMODE(secret_files[0].stat().st_mode) == 0o600

    # and run for real by the caller: Slurm runs the script, which reads its config
    with run.Experiment("pipe", base_dir=str(tmp_path / "exps2")) as exp2:
        execute_recipe(recipe, RunConfig(profile="cluster", overrides=["greeting=yo"], passthrough=["--b"]),
                       experiment=exp2)
        exp2.run(detach=True)
    out = Path(exp2._exp_dir, "team-hello", "out.json")
    import time

    deadline = time.monotonic() + 240
    while not out.exists() and time.monotonic() < deadline:
        time.sleep(2)
    import json

    data = json.loads(out.read_text())
    assert "greeting: yo" in data["config"] and data["args"] == ["--b"] and data["token"] == SECRET
    time.sleep(2)  # the batch script's EXIT trap removes the secrets file
    assert _files_containing(tmp_path / "exps2", SECRET) == []
    devnull.close()
