"""A backend another distribution registers through the entry-point group
``nemo_runspec.backends`` is reached like a built-in: env.toml accepts its name, a recipe
command's dry run shows what it renders, its submission is its own, its profile's stray keys
are refused, and a pipeline or a sweep it cannot run is refused in one line. The toy
backend is a real package with a real dist-info (tests/nemo_runspec/backends/toy), put on
the path of the real ``nemotron`` with PYTHONPATH: nothing is patched."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.nemotron_cli import NEMOTRON

TOY = Path(__file__).resolve().parent / "toy"


def _sandbox(tmp_path: Path, profile: str, *, path: Path | None = TOY) -> dict[str, str]:
    (tmp_path / "cwd").mkdir(exist_ok=True)
    (tmp_path / "env.toml").write_text(profile)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_") and k != "PYTHONPATH"}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), NEMOTRON_ENV_FILE=str(tmp_path / "env.toml"),
               NEMORUN_HOME=str(tmp_path / "nemorun"), COLUMNS="200", TERM="dumb",
               TOY_SUBMITTED=str(tmp_path / "submitted.json"))
    if path is not None:
        env["PYTHONPATH"] = str(path)
    return env


def _nemotron(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), *args], cwd=tmp_path / "cwd", env=env, text=True, capture_output=True,
                          timeout=300, stdin=subprocess.DEVNULL)


TOY_PROFILE = '[play]\nexecutor = "toy"\nenv_vars = { TOY_GREETING = "hello" }\n'


def test_a_recipe_dry_run_goes_through_the_plugin(tmp_path: Path) -> None:
    env = _sandbox(tmp_path, TOY_PROFILE)
    proc = _nemotron(tmp_path, env, "nano3", "pretrain", "-c", "tiny", "--run", "play", "--dry-run")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rendered = {"executor": "toy", "name": "nano3/pretrain", "script": "nano3/pretrain", "toy_greeting": "hello"}
    assert json.dumps(rendered, sort_keys=True) in proc.stdout  # the toy's own dry run
    assert "Job config (job.yaml)" in proc.stdout  # after the job, as every backend's
    assert proc.stdout.index("Job config") < proc.stdout.index('"executor": "toy"')
    assert "Native backend" in proc.stdout  # the command's own block
    assert "warning: the toy backend runs nothing" in proc.stderr
    assert not (tmp_path / "submitted.json").exists()


def test_a_recipe_submission_goes_through_the_plugin(tmp_path: Path) -> None:
    env = _sandbox(tmp_path, TOY_PROFILE)
    proc = _nemotron(tmp_path, env, "nano3", "data", "prep", "sft", "-c", "tiny", "--batch", "play")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads((tmp_path / "submitted.json").read_text()) == {
        "executor": "toy", "name": "nano3/data/prep/sft", "script": "nano3/data/prep/sft", "toy_greeting": "hello"}
    assert "toy: submitted nano3/data/prep/sft" in proc.stderr


def test_a_key_the_plugin_does_not_read_is_refused(tmp_path: Path) -> None:
    env = _sandbox(tmp_path, TOY_PROFILE + 'partition = "batch"\n')
    proc = _nemotron(tmp_path, env, "nano3", "pretrain", "-c", "tiny", "--run", "play", "--dry-run")
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "env.toml:4" in lines[0], proc.stderr
    assert "partition = 'batch' is not used by executor = \"toy\" (read only by executor = 'slurm'" in lines[0]


def test_the_plugins_own_key_is_accepted_in_its_profiles_and_typed_as_it_declares(tmp_path: Path) -> None:
    # toy_nodes is declared by the toy's class only (Key(int, ge=1)); a child that extends a toy
    # profile may set it too
    env = _sandbox(tmp_path, TOY_PROFILE + "toy_nodes = 3\n\n[child]\nextends = \"play\"\ntoy_nodes = 4\n")
    proc = _nemotron(tmp_path, env, "nano3", "pretrain", "-c", "tiny", "--run", "play", "--dry-run")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert '"toy_nodes": 3' in proc.stdout
    proc = _nemotron(tmp_path, env, "nano3", "pretrain", "-c", "tiny", "--run", "child", "--dry-run")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert '"toy_nodes": 4' in proc.stdout
    env = _sandbox(tmp_path, TOY_PROFILE + "toy_nodes = 0\n")
    proc = _nemotron(tmp_path, env, "nano3", "pretrain", "-c", "tiny", "--run", "play", "--dry-run")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"error: {tmp_path / 'env.toml'}:4: key 'toy_nodes' in [play] must be greater "
                                   "than or equal to 1, got integer 0")


def test_the_plugins_own_key_is_unknown_to_another_executor(tmp_path: Path) -> None:
    env = _sandbox(tmp_path, TOY_PROFILE + '\n[sl]\nexecutor = "slurm"\naccount = "a"\ntoy_nodes = 3\n')
    proc = _nemotron(tmp_path, env, "nano3", "pretrain", "-c", "tiny", "--run", "sl", "--dry-run")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"error: {tmp_path / 'env.toml'}:8: unknown key 'toy_nodes' in [sl] "
                                   "(did you mean 'nodes'?)")


@pytest.mark.parametrize(("args", "message"), [
    (["nano3", "pipe", "-c", "tiny"], "error: a pipeline runs its stages here or on Slurm; executor = 'toy' is not "
                                      "supported (run the stages one by one with their own commands)"),
    (["nano3", "pretrain", "-c", "tiny", "-m", "fallback.max_steps=5,10"],
     "error: -m/--multirun runs here or on Slurm; executor = 'toy' is not supported (submit the points one by "
     "one without -m)"),
])
def test_what_the_plugin_cannot_run_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    env = _sandbox(tmp_path, TOY_PROFILE)
    proc = _nemotron(tmp_path, env, *args, "--run", "play", "--dry-run")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert [ln for ln in proc.stderr.splitlines() if ln.strip()] == [message]


def test_a_broken_entry_point_is_one_line(tmp_path: Path) -> None:
    dist = tmp_path / "plugins" / "broken_backend-2.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-backend\nVersion: 2.0\n")
    (dist / "entry_points.txt").write_text("[nemo_runspec.backends]\nbroken = no_such_module:Backend\n")
    env = _sandbox(tmp_path, '[b]\nexecutor = "broken"\n', path=tmp_path / "plugins")
    proc = _nemotron(tmp_path, env, "nano3", "pretrain", "-c", "tiny", "--run", "b", "--dry-run")
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert ("executor = 'broken': entry point broken = no_such_module:Backend (distribution broken-backend 2.0) "
            "failed to load: ModuleNotFoundError") in lines[0]


def test_without_the_plugin_its_name_is_an_unknown_executor(tmp_path: Path) -> None:
    env = _sandbox(tmp_path, TOY_PROFILE, path=None)
    proc = _nemotron(tmp_path, env, "nano3", "pretrain", "-c", "tiny", "--run", "play", "--dry-run")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"error: {tmp_path / 'env.toml'}:2: key 'executor' in [play] must be one of 'local', 'slurm', 'docker', "
        "'skypilot', 'dgxcloud', 'lepton', got string 'toy' (valid: dgxcloud, docker, lepton, local, skypilot, "
        "slurm)")
