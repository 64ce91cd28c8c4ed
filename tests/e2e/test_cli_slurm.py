"""The `nemotron` CLI end to end on the local 2-node Slurm cluster (and sshd).

Each test runs the real console script in a subprocess with its own
NEMOTRON_HOME, env.toml and artifact registry, exactly as a user would.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.nemotron_cli import NEMOTRON

pytestmark = [pytest.mark.slurm]

# made when the tests run: a literal here would be in the repository, which the job may ship (its
# code packager), and the test would find its own source in the job dir
SECRET = "hf_e2eSECRET" + secrets.token_hex(10)


@pytest.fixture
def home(tmp_path: Path, slurm_cluster, ssh_target) -> dict:
    nhome = tmp_path / "nhome"
    nhome.mkdir()
    env_toml = tmp_path / "env.toml"
    env_toml.write_text(textwrap.dedent(f"""
        [cluster]
        executor = "slurm"
        account = "{slurm_cluster.account}"
        partition = "{slurm_cluster.default_partition}"
        batch_partition = "{slurm_cluster.batch_partition}"
        container_image = ""
        gpus_per_node = 0
        nodes = 1
        time = "00:10:00"

        [two-nodes]
        extends = "cluster"
        nodes = 2
        ray_timeout = 240

        [with-secret]
        extends = "two-nodes"
        env_vars = {{ HF_TOKEN = "{SECRET}", GREETING = "hello" }}

        [over-ssh]
        extends = "cluster"
        tunnel = "ssh"
        host = "{ssh_target.host}"
        port = {ssh_target.port}
        user = "{ssh_target.user}"
        identity = "{ssh_target.identity}"
        remote_job_dir = "{tmp_path / 'remote-jobs'}"
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(nhome), NEMOTRON_ENV_FILE=str(env_toml),
               NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "registry"), NEMORUN_HOME=str(nhome / "nemorun"),
               COLUMNS="250", TERM="dumb")
    return {"env": env, "nhome": nhome, "tmp": tmp_path, "registry": tmp_path / "registry"}


def nemotron(home: dict, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), *args], env=home["env"], cwd=home["tmp"], text=True,
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def _all_text_under(path: Path) -> str:
    chunks = []
    for p in path.rglob("*"):
        if p.is_file() and p.stat().st_size < 5_000_000:
            chunks.append(p.read_bytes().decode(errors="replace"))
    return "\n".join(chunks)


def test_data_prep_as_ray_job_on_two_nodes_then_pretrain_dry_run_resolves_it(home):
    proc = nemotron(home, "nano3", "data", "prep", "pretrain", "-c", "tiny", "--run", "two-nodes")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "[ray] 2/2 node(s) up" in proc.stdout
    assert "published nano3-pretrain-data-tiny:v1" in proc.stdout

    from megatron.core.datasets.indexed_dataset import IndexedDataset

    from nemo_runspec.artifacts.registry import ArtifactRegistry

    art = ArtifactRegistry(home["registry"]).resolve("nano3-pretrain-data-tiny:latest")
    blend = json.loads(Path(art.path, "blend.json").read_text())
    prefixes = blend["train"][1::2]
    assert prefixes, blend
    total = 0
    for prefix in prefixes:
        ds = IndexedDataset(prefix)
        assert len(ds) > 0
        total += sum(len(ds[i]) for i in range(len(ds)))
    assert total > 1000

    before = sorted(str(p) for p in home["tmp"].rglob("*"))
    dry = nemotron(home, "nano3", "pretrain", "-c", "tiny", "--dry-run", "--batch", "cluster")
    assert dry.returncode == 0, dry.stderr
    assert "nano3-pretrain-data-tiny:latest" in dry.stdout
    assert f"v1  {art.path}" in dry.stdout  # ${art:data,path} resolves to the published data
    assert "#SBATCH --partition=batch" in dry.stdout  # batch_partition for --batch
    assert sorted(str(p) for p in home["tmp"].rglob("*")) == before  # no side effects


@pytest.mark.cluster_alone  # two-node torchrun rendezvous on port 29500 of the head host; here every node is one host
def test_kit_preflight_two_nodes_gloo_attached(home):
    proc = nemotron(home, "kit", "preflight", "--run", "two-nodes")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "preflight passed: 2 rank(s) on 2 node(s), backend gloo" in proc.stdout
    assert re.search(r"all-reduce: expected 3, got 3", proc.stdout)
    assert "COMPLETED (exit code 0)" in proc.stderr


def test_failing_job_gives_nonzero_exit_with_run(home):
    proc = nemotron(home, "kit", "preflight", "--run", "cluster",
                    "preflight.require_env=[NEMOTRON_E2E_ABSENT]")
    assert proc.returncode != 0
    assert "NEMOTRON_E2E_ABSENT is not set" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_batch_returns_at_once_with_id_dir_log_and_commands(home, slurm_cluster):
    proc = nemotron(home, "kit", "preflight", "--batch", "cluster")
    assert proc.returncode == 0, proc.stderr
    err = " ".join(proc.stderr.split())
    job_id = re.search(r"Submitted Slurm job (\d+)", err).group(1)
    log = re.search(r"log: (\S+)", err).group(1)
    for needle in (f"squeue -j {job_id}", f"scancel {job_id}", f"tail -f {log}", "job dir:"):
        assert needle in err
    result = slurm_cluster.wait(job_id, timeout=300)
    assert result.state == "COMPLETED"
    assert "preflight passed" in Path(log).read_text()


def test_unknown_partition_is_slurms_message_in_one_line(home):
    proc = nemotron(home, "kit", "preflight", "--batch", "cluster", "run.env.batch_partition=nosuchpart")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "invalid partition" in lines[0].lower(), proc.stderr


def test_secret_reaches_job_but_no_file_or_log(home):
    proc = nemotron(home, "kit", "preflight", "--run", "with-secret", "preflight.require_env=[HF_TOKEN]")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    # HF_TOKEN (required here) and GREETING (from the profile) were both present in the job
    rows = re.findall(r"^\[default0\]:\d+\s+n\d.*?(\d+)/(\d+)\s+OK\s*$", proc.stdout, re.M)
    assert rows and all(a == b == "2" for a, b in rows), proc.stdout[-2000:]
    assert SECRET not in proc.stdout + proc.stderr
    jobs = home["nhome"] / "jobs"
    assert jobs.exists()
    assert SECRET not in _all_text_under(jobs)
    assert not list(jobs.rglob(".nemotron-secrets.env"))


def test_submission_over_ssh(home):
    proc = nemotron(home, "kit", "preflight", "--run", "over-ssh")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "preflight passed: 1 rank(s)" in proc.stdout
    assert any((home["tmp"] / "remote-jobs").rglob("*_sbatch.sh"))
