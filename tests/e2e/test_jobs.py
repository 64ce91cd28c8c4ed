"""`nemotron jobs list|status|logs|cancel` on the local 2-node Slurm cluster (and sshd).

Jobs are submitted with the real console script (`kit preflight --batch ...`),
then found again only through the submission ledger: no test passes a job dir.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from tests.nemotron_cli import NEMOTRON

pytestmark = [pytest.mark.slurm]

SECRET = "hf_e2eJOBSsecret0123456789abcdefgh"


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
        env_vars = {{ HF_TOKEN = "{SECRET}" }}

        [sleeper]
        extends = "cluster"
        startup_commands = ["echo sleeper-started", "sleep 600"]

        [held]
        extends = "cluster"
        sbatch_options = {{ begin = "now+1hour" }}

        [over-ssh]
        extends = "cluster"
        tunnel = "ssh"
        host = "{ssh_target.host}"
        port = {ssh_target.port}
        user = "{ssh_target.user}"
        identity = "{ssh_target.identity}"
        remote_job_dir = "{tmp_path / 'remote-jobs'}"
    """))
    # sacct/squeue/scancel that fail: a `jobs` command run with this PATH must not use the local ones
    poisoned = tmp_path / "poisoned-bin"
    poisoned.mkdir()
    for name in ("sacct", "squeue", "scancel"):
        (poisoned / name).write_text(f"#!/bin/sh\necho '{name}: poisoned for this test' >&2\nexit 97\n")
        (poisoned / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(nhome), NEMOTRON_ENV_FILE=str(env_toml),
               NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "registry"), NEMORUN_HOME=str(nhome / "nemorun"),
               COLUMNS="250", TERM="dumb")
    return {"env": env, "nhome": nhome, "tmp": tmp_path, "poisoned": poisoned, "submitted": []}


def nemotron(home: dict, *args: str, timeout: float = 600, path_first: Path | None = None,
             ) -> subprocess.CompletedProcess[str]:
    env = dict(home["env"])
    if path_first is not None:
        env["PATH"] = f"{path_first}{os.pathsep}{env['PATH']}"
    return subprocess.run([str(NEMOTRON), *args], env=env, cwd=home["tmp"], text=True,
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def submit(home: dict, profile: str) -> str:
    proc = nemotron(home, "kit", "preflight", "--batch", profile)
    assert proc.returncode == 0, proc.stderr[-3000:]
    job_id = re.search(r"Submitted Slurm job (\d+)", proc.stderr).group(1)
    home["submitted"].append(job_id)
    return job_id


@pytest.fixture(autouse=True)
def _cancel_leftovers(home):
    yield
    if home["submitted"]:
        subprocess.run(["scancel", *home["submitted"]], capture_output=True)


def status_json(home: dict, ref: str, **kw) -> dict:
    proc = nemotron(home, "jobs", "status", ref, "--json", **kw)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def wait_state(home: dict, job_id: str, states: set[str], timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    data: dict = {}
    while time.monotonic() < deadline:
        data = status_json(home, job_id)
        if data["state"] in states:
            return data
        time.sleep(1)
    pytest.fail(f"job {job_id} not in {states} after {timeout}s: {data}")


def rows(out: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in out.strip().splitlines()[1:]}


def test_batch_job_followed_listed_and_inspected_by_id_only(home, slurm_cluster):
    job_id = submit(home, "cluster")
    # follow the log to the end, knowing nothing but the id
    proc = nemotron(home, "jobs", "logs", "-f", job_id, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "preflight passed: 1 rank(s)" in proc.stdout
    assert re.search(rf"job {job_id}: COMPLETED \(exit code 0\)", proc.stderr)
    assert slurm_cluster.wait(job_id).state == "COMPLETED"

    proc = nemotron(home, "jobs", "status", job_id)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith(f"job {job_id} (nemotron-kit-preflight)")
    assert "state:      COMPLETED" in out and "exit code:  0 (sacct 0:0)" in out
    assert "recipe:     kit/preflight" in out and "cluster:    local" in out
    assert f"profile:    cluster ({home['tmp'] / 'env.toml'})" in out
    job_dir = Path(re.search(r"job dir:\s+(\S+)", out).group(1))
    log = Path(re.search(r"^  log:\s+(\S+)", out, re.M).group(1))
    assert job_dir.is_dir() and log.is_file() and log.parent == job_dir
    assert re.search(r"nodes:\s+n\d", out)

    assert "preflight passed" in nemotron(home, "jobs", "logs", job_id).stdout
    listed = nemotron(home, "jobs", "list")
    assert listed.returncode == 0, listed.stderr
    assert rows(listed.stdout)[job_id][1:3] == ["COMPLETED", "kit/preflight"]
    assert job_id in rows(nemotron(home, "jobs", "list", "--recipe", "kit/preflight", "--state", "CD").stdout)
    assert job_id not in nemotron(home, "jobs", "list", "--state", "RUNNING").stdout
    # the ledger names the job, never its secret
    ledger = (home["nhome"] / "jobs" / "submissions.jsonl").read_text()
    assert json.loads(ledger.splitlines()[0])["job_id"] == job_id
    assert SECRET not in ledger


def test_cancel_a_running_sleep_job_and_squeue_without_sacct(home, slurm_cluster):
    job_id = submit(home, "sleeper")
    data = wait_state(home, job_id, {"RUNNING"})
    assert re.fullmatch(r"n\d", data["nodes"]), data
    # sacct gone (no accounting): the state still comes from squeue
    no_sacct = home["tmp"] / "no-sacct"
    no_sacct.mkdir()
    (no_sacct / "sacct").write_text("#!/bin/sh\necho 'sacct: error: Slurm accounting storage is disabled' >&2\nexit 1\n")
    (no_sacct / "sacct").chmod(0o755)
    data = status_json(home, job_id, path_first=no_sacct)
    assert data["state"] == "RUNNING" and data["nodes"], data
    deadline = time.monotonic() + 60
    while "sleeper-started" not in nemotron(home, "jobs", "logs", job_id, "--sbatch-log").stdout:
        assert time.monotonic() < deadline, "the startup command's output never reached the batch log"
        time.sleep(1)

    proc = nemotron(home, "jobs", "cancel", job_id)
    assert proc.returncode == 0, proc.stderr
    assert f"cancelled job {job_id} (was RUNNING)" in proc.stdout
    assert slurm_cluster.wait(job_id).state == "CANCELLED"
    assert wait_state(home, job_id, {"CANCELLED"})["exit_code"] != 0
    proc = nemotron(home, "jobs", "cancel", job_id)
    assert proc.returncode == 0 and f"job {job_id} already CANCELLED" in proc.stdout


def test_pipe_status_and_cancel_act_on_its_unfinished_stages(home, slurm_cluster):
    done = submit(home, "cluster")
    first, second = submit(home, "held"), submit(home, "held")
    assert slurm_cluster.wait(done).state == "COMPLETED"
    ledger = [json.loads(x) for x in (home["nhome"] / "jobs" / "submissions.jsonl").read_text().splitlines()]
    dirs = {x["job_id"]: x["job_dir"] for x in ledger}
    # the record a pipeline writes next to the ledger
    (home["nhome"] / "pipes").mkdir()
    (home["nhome"] / "pipes" / "e2e-pipe.json").write_text(json.dumps({
        "id": "e2e-pipe", "created": "2025-01-01T00:00:00Z", "profile": "cluster",
        "env_file": str(home["tmp"] / "env.toml"),
        "stages": [
            {"name": "prep", "job_id": None, "job_dir": None, "depends_on": [], "skipped": True},
            {"name": "check", "job_id": done, "job_dir": dirs[done], "depends_on": ["prep"], "skipped": False},
            {"name": "train", "job_id": first, "job_dir": dirs[first], "depends_on": ["check"], "skipped": False},
            {"name": "eval", "job_id": second, "job_dir": dirs[second], "depends_on": ["train"], "skipped": False},
        ]}))

    listed = nemotron(home, "jobs", "list")
    assert listed.returncode == 0, listed.stderr
    pipe_col = {r[0]: r[-1] for r in rows(listed.stdout).values()}
    assert pipe_col[first] == "e2e-pipe:train" and pipe_col[second] == "e2e-pipe:eval"
    assert pipe_col[done] == "e2e-pipe:check" and "e2e-pipe:prep" in listed.stdout

    data = status_json(home, "e2e-pipe")
    states = {s["name"]: (s["state"], s["reason"]) for s in data["stages"]}
    assert states["check"][0] == "COMPLETED" and states["prep"][0] == "SKIPPED"
    assert states["train"] == ("PENDING", "BeginTime") and states["eval"] == ("PENDING", "BeginTime")

    ambiguous = nemotron(home, "jobs", "status", "kit-preflight")
    assert ambiguous.returncode == 2 and "matches 3 jobs" in ambiguous.stderr and first in ambiguous.stderr

    proc = nemotron(home, "jobs", "cancel", "e2e-pipe")
    assert proc.returncode == 0, proc.stderr
    assert f"job {done} already COMPLETED; nothing to cancel" in proc.stdout
    assert f"cancelled job {first} (was PENDING)" in proc.stdout
    assert f"cancelled job {second} (was PENDING)" in proc.stdout
    assert slurm_cluster.wait(first).state == slurm_cluster.wait(second).state == "CANCELLED"
    assert slurm_cluster.job_result(done).state == "COMPLETED"
    # jobs that never started leave no secrets file behind
    for job_id in (first, second):
        assert not (Path(dirs[job_id]) / ".nemotron-secrets.env").exists()


def test_job_submitted_over_ssh_is_asked_about_over_ssh(home, slurm_cluster):
    job_id = submit(home, "over-ssh")
    # with local sacct/squeue/scancel that fail, only the SSH tunnel can answer
    proc = nemotron(home, "jobs", "logs", "-f", job_id, path_first=home["poisoned"], timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "preflight passed: 1 rank(s)" in proc.stdout
    data = status_json(home, job_id, path_first=home["poisoned"])
    assert data["state"] == "COMPLETED" and data["exit_code"] == 0 and data["tunnel"] == "ssh"
    assert data["job_dir"].startswith(str(home["tmp"] / "remote-jobs"))
    assert data["ssh"]["host"] == "127.0.0.1" and data["ssh"]["port"] == 2222
    listed = nemotron(home, "jobs", "list", path_first=home["poisoned"])
    assert listed.returncode == 0, listed.stderr
    assert rows(listed.stdout)[job_id][1] == "COMPLETED", listed.stdout + listed.stderr
    # and cancelling goes there too (a finished job: nothing to do, still asked remotely)
    proc = nemotron(home, "jobs", "cancel", job_id, path_first=home["poisoned"])
    assert proc.returncode == 0 and f"job {job_id} already COMPLETED" in proc.stdout
