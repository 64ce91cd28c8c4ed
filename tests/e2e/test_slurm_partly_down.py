"""Slurm partly down, for real: slurmdbd or slurmctld stopped, a job's log deleted, no slurm.conf.

The daemon tests stop a daemon of the shared test cluster for a few seconds, so
they are ``cluster_alone`` (run after the others, one at a time); the daemon is
always started again (``scripts/slurm-cluster.sh up``, idempotent) in a
``finally``. Checked: ``nemotron jobs list/status/logs`` say which part of Slurm
could not be reached, in Slurm's words, and what Slurm said last about the job
(never a bare ``UNKNOWN?``); a missing ``SLURM_CONF`` stops a submission with one
line long before the client's own 60 s of retries.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import CLUSTER_SCRIPT, _state_dir
from .helpers import cli_env

pytestmark = [pytest.mark.slurm]

NEMOTRON = Path(sys.executable).with_name("nemotron")

RECIPE = '''\
# /// script
# [tool.runspec]
# name = "e2e/partly-down"
#
# [tool.runspec.run]
# launch = "direct"
# ///
import os, sys, time
print("started", flush=True)
time.sleep(int(sys.argv[-1]) if sys.argv[-1].isdigit() else 1)
'''


@pytest.fixture
def sandbox(tmp_path: Path, slurm_cluster) -> dict:
    recipe_dir = tmp_path / "recipes"
    recipe_dir.mkdir()
    (recipe_dir / "partly_down.py").write_text(RECIPE)
    (recipe_dir / "config").mkdir()
    (recipe_dir / "config" / "default.yaml").write_text("x: 1\n")
    env = cli_env(tmp_path, slurm_cluster, f'batch_partition = "{slurm_cluster.batch_partition}"\n'
                                           'packager = "self_contained"\n')
    return {"tmp": tmp_path, "env": env, "script": recipe_dir / "partly_down.py", "ids": []}


@pytest.fixture(autouse=True)
def cancel_ours(sandbox):
    yield
    if sandbox["ids"]:
        subprocess.run(["scancel", *sandbox["ids"]], capture_output=True)


def nemotron(sb: dict, *args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), *args], env={**sb["env"], **env}, cwd=sb["tmp"], text=True,
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def submit(sb: dict, seconds: int) -> str:
    proc = nemotron(sb, "run", str(sb["script"]), "--batch", "cluster", "--", str(seconds))
    assert proc.returncode == 0, proc.stderr[-2000:]
    job_id = json.loads(proc.stdout)["job_id"]
    sb["ids"].append(job_id)
    return job_id


def wait_state(job_id: str, states: set[str], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State"], capture_output=True,
                             text=True).stdout.split()
        if out and out[0] in states:
            return
        time.sleep(0.5)
    pytest.fail(f"job {job_id} never reached {states}")


class Stopped:
    """Stop one daemon of the test cluster (SIGTERM to its pid file's process); start it
    again with ``slurm-cluster.sh up`` however the body ends."""

    def __init__(self, daemon: str) -> None:
        self.daemon = daemon

    def __enter__(self) -> Stopped:
        pid = int((_state_dir() / "run" / f"{self.daemon}.pid").read_text().strip())
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        return self

    def __exit__(self, *exc: object) -> None:
        up = subprocess.run(["bash", str(CLUSTER_SCRIPT), "up"], capture_output=True, text=True, timeout=600,
                            stdin=subprocess.DEVNULL)
        assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-2000:]


@pytest.mark.cluster_alone  # stops slurmdbd, which every other test's sacct needs
def test_accounting_down_jobs_say_so_and_show_the_last_known_state(sandbox):
    done = submit(sandbox, 1)
    wait_state(done, {"COMPLETED"})
    seen = nemotron(sandbox, "jobs", "list")  # Slurm answers: what it says is remembered
    assert re.search(rf"^{done}\s+COMPLETED\b", seen.stdout, re.M), seen.stdout + seen.stderr
    with Stopped("slurmdbd"):
        listed = nemotron(sandbox, "jobs", "list")
        status = nemotron(sandbox, "jobs", "status", done)
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"^warning: Slurm accounting \(slurmdbd\) could not be reached \(sacct: .+\)", listed.stderr,
                     re.M), listed.stderr
    assert re.search(rf"^{done}\s+UNKNOWN \(last COMPLETED\)", listed.stdout, re.M), listed.stdout
    assert "UNKNOWN?" not in listed.stdout
    state_line = next(ln for ln in status.stdout.splitlines() if ln.strip().startswith("state:"))
    assert "Slurm accounting (slurmdbd) could not be reached" in state_line
    assert re.search(r"last known: COMPLETED \(exit 0\) on \S+ \(seen ", state_line), state_line
    assert "there is no sacct" not in status.stdout + status.stderr


@pytest.mark.cluster_alone  # stops slurmctld, which every other test needs
def test_controller_down_jobs_say_so_and_following_ends_with_the_last_known_state(sandbox):
    running = submit(sandbox, 90)
    wait_state(running, {"RUNNING"})
    seen = nemotron(sandbox, "jobs", "status", running)
    assert "RUNNING" in seen.stdout, seen.stdout + seen.stderr
    with Stopped("slurmctld"):  # both at once: the outage lasts as long as the slower one
        follow_proc = subprocess.Popen([str(NEMOTRON), "jobs", "logs", "-f", running], cwd=sandbox["tmp"],
                                       env={**sandbox["env"], "NEMOTRON_SLURM_RETRY_SECONDS": "3"}, text=True,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        status = nemotron(sandbox, "jobs", "status", running)
        out, err = follow_proc.communicate(timeout=300)
        follow = subprocess.CompletedProcess(follow_proc.args, follow_proc.returncode, out, err)
    state_line = next(ln for ln in status.stdout.splitlines() if ln.strip().startswith("state:"))
    assert state_line.split()[1] == "RUNNING", state_line  # accounting still knows it
    assert "the Slurm controller (slurmctld) could not be reached" in state_line, status.stdout
    assert "warning: the Slurm controller (slurmctld) could not be reached" in status.stderr
    assert follow.returncode == 1, follow.stderr
    assert "started" in follow.stdout  # the log was followed while the state could not be
    assert re.search(r"warning: job \d+: the Slurm controller \(slurmctld\) could not be reached \(squeue: .+\); "
                     r"retrying", follow.stderr), follow.stderr
    assert re.search(r"^error: the Slurm controller \(slurmctld\) could not be reached for \d+s while following "
                     r"job \d+ \(squeue: .+\); last known: RUNNING on \S+", follow.stderr, re.M), follow.stderr


def test_following_a_finished_job_whose_log_was_deleted_says_so_at_once(sandbox):
    done = submit(sandbox, 1)
    wait_state(done, {"COMPLETED"})
    status = json.loads(nemotron(sandbox, "jobs", "status", done, "--json").stdout)
    Path(status["log_path"]).unlink()
    started = time.monotonic()
    follow = nemotron(sandbox, "jobs", "logs", "-f", done)
    assert follow.returncode == 1, follow.stderr
    assert time.monotonic() - started < 20  # not the 23 s of waiting for accounting it used to take
    assert f"error: job {done} (COMPLETED) left no log at {status['log_path']}: deleted" in follow.stderr


def test_a_log_deleted_while_the_job_runs_is_reported_while_following(sandbox):
    job = submit(sandbox, 25)
    wait_state(job, {"RUNNING"})
    status = json.loads(nemotron(sandbox, "jobs", "status", job, "--json").stdout)
    deadline = time.monotonic() + 30
    while not Path(status["log_path"]).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    Path(status["log_path"]).unlink()
    follow = nemotron(sandbox, "jobs", "logs", "-f", job)
    assert re.search(rf"warning: job {job}: its log {re.escape(status['log_path'])} does not exist", follow.stderr), \
        follow.stderr


def test_a_missing_slurm_conf_stops_a_submission_with_one_line(sandbox, tmp_path):
    missing = tmp_path / "nowhere" / "slurm.conf"
    started = time.monotonic()
    proc = nemotron(sandbox, "run", str(sandbox["script"]), "--batch", "cluster", SLURM_CONF=str(missing))
    took = time.monotonic() - started
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: Slurm's configuration ") and str(missing) in lines[0]
    assert took < 30, took  # sbatch and sinfo alone would each retry for 60 s
    jobs = sandbox["tmp"] / "home" / "jobs" / "experiments"
    assert not jobs.exists() or not [p for p in jobs.rglob("*") if p.is_file()]
