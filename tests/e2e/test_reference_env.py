"""env.toml written for the reference system, submitted to the local Slurm cluster.

- a profile without `account`: no `--account` line; Slurm uses the user's default account
  (root's is `testacct` here), and for a user who has none (nobody) Slurm's own message,
  in one `error:` line, at submission;
- the reference's forms in a real job: `container`, `env_vars` as a list of NAME=value
  strings (the secret in it reaches the job through the 0600 secrets file only),
  `detach = true` turning --run into --batch, and `run.nodes=2` on the command line.
"""

from __future__ import annotations

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
SECRET = "hf_e2eREFERENCE" + secrets.token_hex(10)


@pytest.fixture
def home(tmp_path: Path, slurm_cluster) -> dict:
    nhome = tmp_path / "nhome"
    nhome.mkdir()
    env_toml = tmp_path / "env.toml"
    env_toml.write_text(textwrap.dedent(f"""
        [no-account]
        executor = "slurm"
        partition = "{slurm_cluster.default_partition}"
        container = ""
        gpus_per_node = 0
        time = "00:05:00"

        [reference]
        executor = "slurm"
        account = "{slurm_cluster.account}"
        partition = "{slurm_cluster.default_partition}"
        batch_partition = "{slurm_cluster.batch_partition}"
        container = ""
        gpus_per_node = 0
        nodes = 1
        time = "00:10:00"
        env_vars = ["GREETING=hello", "HF_TOKEN={SECRET}"]
        detach = true
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(nhome), NEMOTRON_ENV_FILE=str(env_toml),
               NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "registry"), NEMORUN_HOME=str(nhome / "nemorun"),
               COLUMNS="250", TERM="dumb")
    return {"env": env, "nhome": nhome, "tmp": tmp_path}


def nemotron(home: dict, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), *args], env=home["env"], cwd=home["tmp"], text=True,
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def _all_text_under(path: Path) -> str:
    return "\n".join(p.read_bytes().decode(errors="replace") for p in path.rglob("*")
                     if p.is_file() and p.stat().st_size < 5_000_000)


def test_profile_without_account_runs_under_the_users_default_account(home, slurm_cluster):
    """No `account`: no --account line; Slurm charges the user's default account (testacct here)."""
    dry = nemotron(home, "kit", "preflight", "--batch", "no-account", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "#SBATCH --partition=" in dry.stdout and "--account" not in dry.stdout

    proc = nemotron(home, "kit", "preflight", "--batch", "no-account")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    job_id = re.search(r"Submitted Slurm job (\d+)", " ".join(proc.stderr.split())).group(1)
    assert slurm_cluster.wait(job_id, timeout=300).state == "COMPLETED"
    acct = subprocess.run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "Account"],
                          capture_output=True, text=True, timeout=60).stdout.split()
    assert acct == [slurm_cluster.account]


@pytest.mark.skipif(os.geteuid() != 0, reason="submits as a user without a Slurm account (needs root)")
def test_profile_without_account_for_a_user_who_needs_one_gets_slurms_message(home):
    """A user with no Slurm association (nobody) must name an account on this cluster:
    sbatch refuses the job and its own message is the one `error:` line."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="nemotron-e2e-noacct-", dir="/tmp"))
    try:
        base.chmod(0o777)
        env_toml = base / "env.toml"
        env_toml.write_text(Path(home["env"]["NEMOTRON_ENV_FILE"]).read_text()
                            + '\n[as-nobody]\nextends = "no-account"\npackager = "none"\nworkdir = "/tmp"\n')
        env = dict(home["env"], NEMOTRON_HOME=str(base / "nhome"), NEMOTRON_ENV_FILE=str(env_toml),
                   NEMORUN_HOME=str(base / "nhome" / "nemorun"), HOME=str(base),
                   NEMOTRON_ARTIFACTS_ROOT=str(base / "registry"), PYTHONDONTWRITEBYTECODE="1")
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               str(NEMOTRON), "kit", "preflight", "--batch", "as-nobody"],
                              env=env, cwd=base, text=True, capture_output=True, timeout=300,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
        assert len(lines) == 1, proc.stderr
        assert "Slurm rejected" in lines[0] and "invalid account" in lines[0].lower(), lines[0]
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.cluster_alone  # two-node torchrun rendezvous on port 29500 of the head host; here every node is one host
def test_reference_profile_runs_detached_with_its_list_secret_only_in_the_job(home, slurm_cluster):
    proc = nemotron(home, "kit", "preflight", "--run", "reference", "run.nodes=2",
                    "preflight.require_env=[HF_TOKEN,GREETING]")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    err = " ".join(proc.stderr.split())
    assert "detach = true" in err  # said why --run returned at once
    job_id = re.search(r"Submitted Slurm job (\d+)", err).group(1)
    log = Path(re.search(r"log: (\S+)", err).group(1))
    result = slurm_cluster.wait(job_id, timeout=300)
    assert result.state == "COMPLETED", (result, log.read_text() if log.exists() else "no log")
    text = log.read_text()
    assert "preflight passed: 2 rank(s) on 2 node(s)" in text, text[-2000:]
    assert SECRET not in proc.stdout + proc.stderr + text
    jobs = home["nhome"] / "jobs"
    assert SECRET not in _all_text_under(jobs)
    assert not list(jobs.rglob(".nemotron-secrets.env"))  # the batch script deleted it
