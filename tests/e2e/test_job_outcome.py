"""How a job ends, as the CLI says it (docs/execution.md, "How a job ends"), on the local cluster.

Each job runs through the real console script with ``--run`` (or ``--batch``, then
``nemotron jobs``), and the summary the CLI prints last is checked word for word
against what the job itself wrote into its log: our own error line, the user's
Python exception, Slurm's own line for a time limit or an ``scancel``, the
verdict of a passed preflight, the final line of a tiny pretraining. No summary
of a successful run holds a C++ stack frame, a c10d warning or a shell trace
line; the log files keep everything.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .helpers import cli_env

pytestmark = [pytest.mark.slurm]

NEMOTRON = Path(sys.executable).with_name("nemotron")
#: the prefixes torchrun (--tee) and torch's excepthook put in front of a rank's lines
RANK_PREFIX = re.compile(r"^(?:\[default\d+\]:|\[rank\d+\]: )+")
NOISE = ("frame #", "[c10d]", "Exception raised from", "ChildFailedError", "Root Cause", "failed to shutdown the rendezvous")

BOOM = '''\
# /// script
# [tool.runspec]
# schema = "1"
# name = "user/boom"
# [tool.runspec.run]
# launch = "{launch}"
# [tool.runspec.resources]
# nodes = 1
# gpus_per_node = 0
# ///
"""A user's training script that fails in its own code."""
print("step 1 of my training", flush=True)
rows = {{"lr": 0.1}}
print(rows["learning_rate"])
'''
SLEEPY = BOOM.replace("user/boom", "user/sleepy").replace(
    'rows = {{"lr": 0.1}}\nprint(rows["learning_rate"])', 'import time\ntime.sleep(600)')


def nemotron(env: dict, cwd: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), *args], env=env, cwd=cwd, text=True, capture_output=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _job_id(stderr: str) -> str:
    return re.search(r"Submitted Slurm job (\d+)", stderr).group(1)


def _summary(stderr: str, job_id: str) -> list[str]:
    """What --run printed after the job's last queue state: the end-of-job summary."""
    # (a job that ends within one poll is never seen running: then its last state was pending;
    # one seen while Slurm tears it down was last "completing on NODE")
    states = list(re.finditer(rf"^job {job_id}: (running on|pending|completing on)\b.*$", stderr, re.M))
    assert states, stderr
    return stderr[states[-1].start():].splitlines()[1:]


def _paths(lines: list[str]) -> dict[str, Path]:
    return {m.group(1): Path(m.group(2)) for ln in lines if (m := re.match(r"^  (log|batch log): +(\S+)$", ln))}


def _said(log: Path, start: str) -> list[str]:
    """The lines of ``log`` that start with ``start`` once the rank prefix is taken off."""
    return [bare for line in log.read_text().splitlines() if (bare := RANK_PREFIX.sub("", line)).startswith(start)]


def _no_noise(lines: list[str]) -> None:
    for line in lines:
        assert not line.startswith(("+ ", "  | +")), line
        for needle in NOISE:
            assert needle not in line, line


@pytest.fixture
def env(tmp_path, slurm_cluster) -> dict:
    return cli_env(tmp_path, slurm_cluster, """
        [short]
        extends = "cluster"
        time = "00:01:00"
    """)


def test_a_failure_in_our_code_ends_with_our_error_line(tmp_path, env):
    assert nemotron(env, tmp_path, "nano3", "data", "prep", "pretrain", "-c", "tiny").returncode == 0
    # fails on the node only: the device is checked where the job runs
    proc = nemotron(env, tmp_path, "nano3", "pretrain", "-c", "tiny", "--run", "cluster", "+fallback.device=cuda")
    assert proc.returncode != 0, proc.stderr
    job_id = _job_id(proc.stderr)
    summary = _summary(proc.stderr, job_id)
    log = _paths(summary)["log"]
    [said] = set(_said(log, "error: "))  # each rank said it
    assert said.startswith("error: ") and "fallback.device is cuda but no GPU is visible" in said
    assert summary[0] == said
    assert re.fullmatch(rf"job {job_id}: FAILED \(exit code \d+; rank 0 exited 2\)", summary[1]), summary[1]
    _no_noise(summary)
    folded = next(ln for ln in summary if ln.startswith("  (folded: "))
    assert "torchrun's failure report" in folded and "shell tracing" in folded
    assert "ChildFailedError" in log.read_text()  # folded from the summary, never from the log
    assert "+ " in _paths(summary)["batch log"].read_text()


def test_a_successful_tiny_pretrain_ends_with_its_final_line(tmp_path, env):
    assert nemotron(env, tmp_path, "nano3", "data", "prep", "pretrain", "-c", "tiny").returncode == 0
    proc = nemotron(env, tmp_path, "nano3", "pretrain", "-c", "tiny", "--run", "cluster", "fallback.max_steps=4")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    job_id = _job_id(proc.stderr)
    summary = _summary(proc.stderr, job_id)
    log = _paths(summary)["log"]
    [final] = _said(log, "[pretrain] final loss ")
    [published] = _said(log, "published nano3-pretrain-model-tiny:")
    ref = published.split()[1]
    assert summary == [f"{final}; published {ref}", f"job {job_id}: COMPLETED (exit code 0)", f"  log:       {log}"]
    [line] = [ln for ln in proc.stdout.splitlines() if "nemotron-outcome: " in ln]
    outcome = json.loads(line.partition("nemotron-outcome: ")[2])
    assert outcome["ok"] and outcome["figures"]["steps"] == 4 and outcome["figures"]["published"] == ref


@pytest.mark.parametrize("launch", ["torchrun", "direct"])
def test_a_python_exception_in_the_users_code_is_the_last_error_of_the_log(tmp_path, env, launch):
    script = tmp_path / "boom.py"
    script.write_text(BOOM.format(launch=launch))
    proc = nemotron(env, tmp_path, "run", str(script), "--run", "cluster")
    assert proc.returncode == 1, proc.stderr
    job_id = _job_id(proc.stderr)
    summary = _summary(proc.stderr, job_id)
    log = _paths(summary)["log"]
    assert _said(log, "KeyError: ") == ["KeyError: 'learning_rate'"]
    assert summary[:2] == ["KeyError: 'learning_rate'",
                           f"job {job_id}: FAILED (exit code 1); the job wrote no outcome line: "
                           "the line above is the last error in its log"]
    _no_noise(summary)
    assert any(ln.endswith("Traceback (most recent call last):") for ln in summary)  # the user's own


def test_a_job_at_its_time_limit_ends_with_slurms_line(tmp_path, env):
    script = tmp_path / "sleepy.py"
    script.write_text(SLEEPY.format(launch="direct"))
    proc = nemotron(env, tmp_path, "run", str(script), "--run", "short", timeout=400)
    assert proc.returncode != 0
    job_id = _job_id(proc.stderr)
    summary = _summary(proc.stderr, job_id)
    batch = _paths(summary)["batch log"].read_text()
    slurm = re.search(rf"\*\*\* JOB {job_id} ON \S+ CANCELLED AT \S+ DUE TO TIME LIMIT \*\*\*", batch).group(0)
    assert summary[:2] == [f"Slurm stopped the job at its time limit: {slurm}",
                           f"job {job_id}: TIMEOUT (exit code 1); the line above is Slurm's, "
                           "the job wrote no outcome line"]
    _no_noise(summary)


def test_a_cancelled_job_says_so_in_jobs_status_and_jobs_logs(tmp_path, env, slurm_cluster):
    script = tmp_path / "sleepy.py"
    script.write_text(SLEEPY.format(launch="direct"))
    sub = nemotron(env, tmp_path, "run", str(script), "--batch", "cluster")
    assert sub.returncode == 0, sub.stderr
    job_id = _job_id(sub.stderr)
    deadline = time.monotonic() + 120
    while slurm_cluster.job_result(job_id) is None or slurm_cluster.job_result(job_id).state != "RUNNING":
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.5)
    assert nemotron(env, tmp_path, "jobs", "cancel", job_id).returncode == 0
    assert slurm_cluster.wait(job_id).state == "CANCELLED"
    status = nemotron(env, tmp_path, "jobs", "status", job_id)
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    batch = Path(next(ln.split(None, 2)[2] for ln in lines if ln.startswith("  batch log:"))).read_text()
    slurm = re.search(rf"\*\*\* JOB {job_id} ON \S+ CANCELLED AT \S+ \*\*\*", batch).group(0)
    said = f"the job was cancelled (scancel, or by an administrator): {slurm}"
    assert lines[1] == f"  outcome:    {said}"  # first, then the state and exit code
    assert lines[2] == "  state:      CANCELLED" and lines[3].startswith("  exit code:  ")
    _no_noise(lines)
    data = json.loads(nemotron(env, tmp_path, "jobs", "status", job_id, "--json").stdout)
    assert data["outcome"]["message"] == said and data["outcome"]["source"] == "slurm"
    logs = nemotron(env, tmp_path, "jobs", "logs", job_id)
    assert logs.returncode == 0 and logs.stdout.startswith("step 1 of my training\n")  # the log as it is
    assert logs.stderr.splitlines()[:2] == [said, f"job {job_id}: CANCELLED (exit code 1); the line above is "
                                                  "Slurm's, the job wrote no outcome line"]


@pytest.mark.cluster_alone  # two-node torchrun rendezvous on port 29500 of the head host; here every node is one host
def test_a_passed_preflight_on_two_nodes_ends_with_its_verdict_and_no_noise(tmp_path, slurm_cluster):
    env = cli_env(tmp_path, slurm_cluster, """
        [two]
        extends = "cluster"
        nodes = 2
    """)
    proc = nemotron(env, tmp_path, "kit", "preflight", "--run", "two")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    job_id = _job_id(proc.stderr)
    summary = _summary(proc.stderr, job_id)
    log = _paths(summary)["log"]
    [verdict] = _said(log, "preflight passed: ")
    assert verdict == "preflight passed: 2 rank(s) on 2 node(s), backend gloo"
    assert summary == [verdict, f"job {job_id}: COMPLETED (exit code 0)", f"  log:       {log}"]
    # each node's torchrun joins a static rendezvous (docs/execution.md, "Teardown after a successful
    # multi-node run"): nothing is left to fold, in the stream or in the log itself
    assert "[nemotron: " not in proc.stdout
    _no_noise(proc.stdout.splitlines())
    _no_noise(log.read_text().splitlines())
    batch = _paths(summary).get("batch log") or log.with_name(f"sbatch_nemotron-kit-preflight_{job_id}.out")
    assert "--rdzv-backend static" in batch.read_text()  # the node's own torchrun, traced by set -x


def test_the_same_inside_a_container(tmp_path, slurm_cluster, container_image):
    venv = Path(sys.prefix)
    mounts = sorted({f"{p}:{p}" for p in (venv, Path(sys.base_prefix), Path(__file__).resolve().parents[2] / "src")})
    env = cli_env(tmp_path, slurm_cluster, textwrap.dedent(f"""
        [ctr]
        extends = "cluster"
        container_image = "{container_image}"
        mounts = {json.dumps(mounts)}
        srun_args = ["--container-env=PATH"]
        env_vars = {{ PATH = "{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin" }}
    """))
    script = tmp_path / "boom.py"
    script.write_text(BOOM.format(launch="torchrun"))
    proc = nemotron(env, tmp_path, "run", str(script), "--run", "ctr")
    assert proc.returncode == 1, proc.stderr
    job_id = _job_id(proc.stderr)
    summary = _summary(proc.stderr, job_id)
    assert _said(_paths(summary)["log"], "KeyError: ") == ["KeyError: 'learning_rate'"]
    assert summary[0] == "KeyError: 'learning_rate'" and summary[1].startswith(f"job {job_id}: FAILED (exit code 1)")
    _no_noise(summary)
    # our own code in the same container: a failure, then a success, each the job's own line
    failed = nemotron(env, tmp_path, "kit", "preflight", "--run", "ctr", "preflight.require_env=[E2E_ABSENT]")
    job_id = _job_id(failed.stderr)
    summary = _summary(failed.stderr, job_id)
    [verdict] = _said(_paths(summary)["log"], "preflight FAILED: ")
    assert summary[0].startswith(verdict + "; first failure: rank 0 (") and "E2E_ABSENT is not set" in summary[0]
    assert failed.returncode == 1 and summary[1] == f"job {job_id}: FAILED (exit code 1)"
    _no_noise(summary)
    passed = nemotron(env, tmp_path, "kit", "preflight", "--run", "ctr")
    assert passed.returncode == 0, passed.stderr
    job_id = _job_id(passed.stderr)
    summary = _summary(passed.stderr, job_id)
    assert summary[:2] == ["preflight passed: 1 rank(s) on 1 node(s), backend gloo",
                           f"job {job_id}: COMPLETED (exit code 0)"]
    _no_noise(summary)
