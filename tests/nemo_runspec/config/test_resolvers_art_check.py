"""An ${art:...} that does not resolve stops the command before anything runs or
is submitted (exit 2), when this machine can read the registry."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from nemo_runspec import parse
from nemo_runspec.artifacts.registry import ArtifactRegistry
from nemo_runspec.cli_context import split_global_args
from nemo_runspec.config.resolvers import registry_reachable
from nemo_runspec.errors import ConfigError
from nemo_runspec.job.compiled import compile_job
from nemo_runspec.recipe_config import recipe_config_from
from tests.nemotron_cli import NEMOTRON

ROOT = Path(__file__).resolve().parents[3]
PRETRAIN = parse(ROOT / "src/nemotron/recipes/nano3/stage0_pretrain/train.py")


@pytest.fixture
def home(tmp_path, monkeypatch):
    nhome = tmp_path / "nhome"
    nhome.mkdir()
    (tmp_path / "env.toml").write_text('[c]\nexecutor = "slurm"\naccount = "a"\npartition = "p"\n'
                                       'container_image = ""\n\n'
                                       '[s]\nextends = "c"\ntunnel = "ssh"\nhost = "login.example"\n'
                                       'remote_job_dir = "/lustre-not-mounted-here/me/jobs"\n')
    monkeypatch.chdir(tmp_path)
    for var in ("NEMOTRON_ENV_FILE", "NEMOTRON_ARTIFACTS_ROOT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NEMOTRON_HOME", str(nhome))
    return nhome


def _compile(*argv):
    gctx, rest = split_global_args(list(argv))
    return compile_job(PRETRAIN, recipe_config_from(gctx, rest))


def test_missing_artifact_is_an_error_before_submission(home):
    with pytest.raises(ConfigError) as err:
        _compile("-c", "tiny", "--batch", "c")
    assert "nano3-pretrain-data-tiny:latest" in str(err.value)
    assert "does not resolve" in str(err.value)


def test_dry_run_shows_instead_of_failing(home):
    job = _compile("-c", "tiny", "--batch", "c", "--dry-run")
    assert job.dry_run


def test_published_artifact_passes(home, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    ArtifactRegistry(home / "artifacts").publish("nano3-pretrain-data-tiny", str(data))
    assert _compile("-c", "tiny", "--batch", "c").name == "nano3/pretrain"


def test_fresh_home_is_checked_though_nothing_was_ever_published(tmp_path, home, monkeypatch):
    # a new user: NEMOTRON_HOME (so the default registry and its parent) not made yet
    fresh = tmp_path / "new-user" / ".nemotron"
    monkeypatch.setenv("NEMOTRON_HOME", str(fresh))
    assert registry_reachable(ArtifactRegistry(fresh / "artifacts"))
    with pytest.raises(ConfigError) as err:
        _compile("-c", "tiny", "--batch", "c")
    assert "nano3-pretrain-data-tiny:latest" in str(err.value) and str(fresh / "artifacts") in str(err.value)
    assert not fresh.exists()  # checking made nothing


def test_cluster_registry_not_mounted_here_is_left_to_the_job_and_said(home, monkeypatch, capfd):
    root = "/lustre-not-mounted-here/team/artifacts"
    monkeypatch.setenv("NEMOTRON_ARTIFACTS_ROOT", root)
    assert not registry_reachable(ArtifactRegistry(root), job_shares_this_machine=False)
    assert _compile("-c", "tiny", "--batch", "s").name == "nano3/pretrain"
    err = capfd.readouterr().err
    notes = [line for line in err.splitlines() if root in line]
    assert notes == [f"note: artifact registry {root} cannot be read from this machine; the job resolves "
                     "nano3-pretrain-data-tiny:latest when it starts"], err
    # the same path for a job that shares this machine's filesystem (a login node) is checked
    with pytest.raises(ConfigError, match="does not resolve"):
        _compile("-c", "tiny", "--batch", "c")


def test_cluster_registry_mounted_here_is_checked_over_ssh(home, tmp_path, monkeypatch):
    mounted = tmp_path / "lustre" / "artifacts"  # its parent exists: the filesystem is mounted here
    mounted.parent.mkdir()
    monkeypatch.setenv("NEMOTRON_ARTIFACTS_ROOT", str(mounted))
    with pytest.raises(ConfigError, match="does not resolve"):
        _compile("-c", "tiny", "--batch", "s")


def test_object_store_that_answers_is_checked():
    assert registry_reachable(ArtifactRegistry("memory://i27-empty-registry"), job_shares_this_machine=False)


def test_cli_exit_code_and_nothing_written(home, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(home), NEMOTRON_ENV_FILE=str(tmp_path / "env.toml"))
    proc = subprocess.run([str(NEMOTRON), "nano3", "pretrain", "-c", "tiny", "--batch", "c"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "nano3-pretrain-data-tiny" in lines[0]
    assert not (home / "jobs").exists()
