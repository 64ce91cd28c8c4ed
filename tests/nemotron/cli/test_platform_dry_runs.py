"""Recipe commands on the executors other than local and Slurm (docker, skypilot, dgxcloud,
lepton), offline: every single-job command shows its dry run there as it does on Slurm (the
job, the executor's fields and script, then the command's own block), and a pipeline, which
those executors cannot chain, is refused in one line."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.nemotron_cli import NEMOTRON

ENV_TOML = """
[dk]
executor = "docker"
container_image = "python:3.11-slim"
ipc_mode = "host"

[sky]
executor = "skypilot"
container_image = "nvcr.io/nvidia/nemo:25.07"
cloud = "kubernetes"

[dgx]
executor = "dgxcloud"
container_image = "nvcr.io/nvidia/nemo:25.07"
base_url = "https://dgx.invalid/api/v1"
kube_apiserver_url = "https://k8s.invalid"
client_id = "my-app"
client_secret = "${oc.env:DGXC_CLIENT_SECRET,unset}"
project_name = "proj"
pvc_nemo_run_dir = "/ws/nemo-run"
pvcs = [{ claimName = "ws", path = "/ws" }]

[lep]
executor = "lepton"
container_image = "nvcr.io/nvidia/nemo:25.07"
nemo_run_dir = "/shared/nr"
resource_shape = "gpu.8xh100-80gb"
node_group = "ng"

[lo]
executor = "local"

[sl]
executor = "slurm"
account = "acct"
partition = "batch"
container_image = "nvcr.io/nvidia/nemo:25.07"
"""


@pytest.fixture()
def sandbox(tmp_path: Path) -> dict:
    (tmp_path / "cwd").mkdir()
    (tmp_path / "env.toml").write_text(textwrap.dedent(ENV_TOML))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), NEMOTRON_ENV_FILE=str(tmp_path / "env.toml"),
               NEMORUN_HOME=str(tmp_path / "nemorun"), COLUMNS="200", TERM="dumb",
               DOCKER_HOST="unix:///nonexistent.sock")
    return {"env": env, "tmp": tmp_path}


def nemotron(sb: dict, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), *args], cwd=sb["tmp"] / "cwd", env=sb["env"], text=True,
                          capture_output=True, timeout=300, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(("command", "block"), [
    (["nano3", "eval", "-c", "tiny"], "Evaluation config (eval.yaml"),
    (["nano3", "model", "eval", "--task", "mmlu"], "Evaluation config (eval.yaml"),
    (["kit", "preflight"], None),
])
def test_eval_and_preflight_dry_runs_on_docker_show_the_job(sandbox, command, block):
    proc = nemotron(sandbox, *command, "--run", "dk", "--dry-run")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "SlurmExecutor" not in proc.stderr
    assert "nemo-run DockerExecutor" in proc.stdout and "ipc_mode: host" in proc.stdout
    assert "/nemo_run/nemotron-job.sh" in proc.stdout
    if block:  # the evaluation block follows the job's script, as on Slurm
        assert proc.stdout.index(block) > proc.stdout.index("/nemo_run/nemotron-job.sh")
    assert not (sandbox["tmp"] / "home" / "jobs").exists()  # offline: nothing written


def test_the_eval_block_is_the_one_a_local_profile_shows(sandbox):
    """(Slurm's differs only by the profile's account, which the launcher's own jobs use.)"""
    def block(profile: str) -> str:
        proc = nemotron(sandbox, "nano3", "eval", "--task", "mmlu", "--run", profile, "--dry-run")
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout[proc.stdout.index("Evaluation config (eval.yaml"):]

    docker = block("dk")
    assert "mmlu" in docker and "Container images" in docker
    assert docker == block("lo")


@pytest.mark.parametrize("profile", ["dk", "sky", "dgx", "lep"])
@pytest.mark.parametrize("command", [["nano3", "pretrain"], ["nano3", "sft", "-c", "tiny"], ["nano3", "convert"],
                                     ["nano3", "rl", "-c", "tiny"]])
def test_training_dry_runs_on_every_platform_end_with_the_native_backend_block(sandbox, command, profile):
    proc = nemotron(sandbox, *command, "--run", profile, "--dry-run")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Native backend (in this image; nemotron.training.versions)" in proc.stdout
    assert proc.stdout.index("Native backend") > proc.stdout.index("/nemo_run/nemotron-job.sh")


@pytest.mark.parametrize("profile", ["dk", "lep"])
@pytest.mark.parametrize("command", [
    ["nano3", "pipe", "-c", "tiny"],
    ["nano3", "pipe", "-c", "tiny", "--stages", "prep-pretrain:pretrain"],
    ["steps", "run", "nano3/prep-pretrain", "-c", "tiny"],  # one stage: still the pipeline's path
])
@pytest.mark.parametrize("dry_run", [True, False])
def test_a_pipeline_on_an_executor_that_cannot_chain_is_one_line(sandbox, command, profile, dry_run):
    """Compiled first (a bad override or a missing input is reported as on Slurm), then refused
    before anything is packaged, shown or submitted."""
    proc = nemotron(sandbox, *command, "--batch", profile, *(["--dry-run"] if dry_run else []))
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    executor = {"dk": "docker", "lep": "lepton"}[profile]
    assert lines == [f"error: a pipeline runs its stages here or on Slurm; executor = {executor!r} is not "
                     "supported (run the stages one by one with their own commands)"], proc.stderr
    assert proc.stdout == ""
    assert not (sandbox["tmp"] / "home" / "jobs").exists()
