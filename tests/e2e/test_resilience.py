"""Resilient training jobs on the local 2-node cluster (docs/resilience.md), for real.

The tiny pretrain fallback (two ranks on one node, 40 steps slowed to ~0.25 s each
by the test-only NEMOTRON_TEST_STEP_DELAY so the tests can act mid-run) is
submitted with ``[PROFILE.resilience]``, several jobs at once:

- ``ref``: left alone; the reference for losses and final weights;
- ``usr1``: gets the time-limit warning delivered by the test itself
  (``scancel --batch --signal=USR1``, what Slurm does ``signal_before`` seconds
  before the limit, with up to a minute of jitter); the ``--signal`` line is
  checked separately in the submitted script;
- ``requeue``: ``scontrol requeue`` from outside (a preemption);
- ``stall``: rank 1 hangs before step 8 (test-only NEMOTRON_TEST_STALL);
- ``exhausted``: ``max_restarts = 1`` and a warning in each attempt.

Then, alone, a job whose node is marked down under it. Every requeue waits
Slurm's own requeue delay (``cred_expire``, 120 s by default, 10 s on the test
cluster) before the next attempt may start, so the jobs run concurrently.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from nemo_runspec.slurm import resilience
from tests.nemotron_cli import NEMOTRON

from .helpers import cli_env

pytestmark = [pytest.mark.slurm]

STEPS = 40
STALL_TIMEOUT = 8
#: seconds from the watchdog's detection to the attempt's end record (docs/resilience.md, Watchdog)
KILL_BOUND = 15
TRAIN = ("nano3", "pretrain", "-c", "tiny", f"fallback.max_steps={STEPS}", "fallback.log_interval=5",
         "fallback.save_interval=10", "run.env.nproc_per_node=2")


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, **kw)


class Home:
    """A NEMOTRON_HOME, env.toml with resilient profiles, and the tiny pretrain data."""

    def __init__(self, root: Path, cluster) -> None:
        self.root = root
        self.env = cli_env(root, cluster, f"""
            nodes = 1
            env_vars = {{ NEMOTRON_TEST_STEP_DELAY = "0.25" }}

            [res.resilience]
            max_restarts = 2
            signal_before = 60
            stall_timeout = {STALL_TIMEOUT}
            startup_timeout = 120

            [res-stall]
            extends = "res"
            env_vars = {{ NEMOTRON_TEST_STALL = "1:8" }}

            [res-once]
            extends = "res"
            resilience = {{ max_restarts = 1, signal_before = 60, stall_timeout = {STALL_TIMEOUT} }}
        """, name="res", time="00:15:00")
        prep = self.nemotron("nano3", "data", "prep", "pretrain", "-c", "tiny")
        assert prep.returncode == 0, prep.stderr[-2000:]

    def nemotron(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(NEMOTRON), *args], env=self.env, cwd=self.root, text=True,
                              capture_output=True, timeout=600, stdin=subprocess.DEVNULL)

    def submit(self, profile: str) -> Job:
        proc = self.nemotron(*TRAIN, "--batch", profile)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        info = json.loads(proc.stdout.strip().splitlines()[-1])
        return Job(info["job_id"], Path(info["job_dir"]))


class Job:
    """A submitted job and the files its attempts leave in its job dir."""

    def __init__(self, job_id: str, job_dir: Path) -> None:
        self.id, self.dir = job_id, job_dir
        self.res = job_dir / "resilience"

    def steps(self, attempt: int | None = None) -> list[dict]:
        path = self.res / "steps.jsonl"
        rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []
        return [r for r in rows if attempt is None or r["attempt"] == attempt]

    def losses(self) -> dict[int, float]:
        """Step -> loss, the last attempt's record winning (steps redone after a crash)."""
        return {r["step"]: r["loss"] for r in self.steps()}

    def records(self) -> list[dict]:
        path = self.res / "attempts.jsonl"
        return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []

    def ends(self) -> list[dict]:
        return [r for r in self.records() if r["event"] == "end"]

    def starts(self) -> list[dict]:
        return [r for r in self.records() if r["event"] == "start"]

    def queue_state(self) -> str:
        return _run(["squeue", "-h", "-j", self.id, "-o", "%T"]).stdout.strip()

    def final_state(self) -> str:
        out = _run(["sacct", "-n", "-P", "-X", "-j", self.id, "-o", "State"]).stdout.split()
        return out[0] if out else ""

    def digests(self) -> list[str]:
        """The final weights' sha256 of every rank, from the last attempt's log."""
        logs = sorted(self.dir.glob(f"log-*_{self.id}_*.out"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
        return sorted(re.findall(r"rank \d+ param sha256 \w+", logs[-1].read_text())) if logs else []


def _wait(cond, timeout: float, what: str, state=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}; {state()}")


def _finished(job: Job) -> bool:
    return not job.queue_state() and job.final_state() not in ("", "RUNNING", "PENDING", "REQUEUED")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, slurm_cluster) -> dict[str, Job]:
    home = Home(tmp_path_factory.mktemp("resilience"), slurm_cluster)
    jobs = {"ref": home.submit("res"), "usr1": home.submit("res"), "requeue": home.submit("res"),
            "stall": home.submit("res-stall"), "exhausted": home.submit("res-once")}
    try:
        # act mid-run on the first attempt; "exhausted" gets the warning in both of its attempts
        pending = {("usr1", 0), ("requeue", 0), ("exhausted", 0), ("exhausted", 1)}
        deadline = time.monotonic() + 600
        while pending and time.monotonic() < deadline:
            for name, attempt in sorted(pending):
                job = jobs[name]
                if len(job.steps(attempt)) < 10:
                    continue
                if name == "requeue":
                    assert _run(["scontrol", "requeue", job.id]).returncode == 0
                else:
                    assert _run(["scancel", "--batch", "--signal=USR1", job.id]).returncode == 0
                pending.discard((name, attempt))
            time.sleep(0.5)
        assert not pending, f"never reached step 10: {pending}"
        _wait(lambda: all(_finished(j) for j in jobs.values()), 600, "all resilience jobs to end")
    finally:
        _run(["scancel", *[j.id for j in jobs.values()]])
    return jobs


def test_signal_line_asks_slurm_for_the_warning(runs):
    script = next(runs["usr1"].dir.parent.glob("*_sbatch.sh")).read_text()
    assert "#SBATCH --signal=B:USR1@60" in script
    assert "trap 'nemotron_on_signal USR1' USR1" in script and 'srun() { nemotron_srun "$@"; }' in script


def test_uninterrupted_reference_run_completes_in_one_attempt(runs):
    ref = runs["ref"]
    assert ref.final_state() == "COMPLETED"
    assert [e["kind"] for e in ref.ends()] == ["completed"]
    assert sorted(ref.losses()) == list(range(1, STEPS + 1))
    assert len(ref.digests()) == 2


@pytest.mark.parametrize("name, kind", [("usr1", "timelimit"), ("requeue", "preempted")])
def test_warning_or_requeue_checkpoints_requeues_and_resumes_exactly(runs, name, kind):
    job, ref = runs[name], runs["ref"]
    assert job.final_state() == "COMPLETED"
    ends = job.ends()
    assert [e["kind"] for e in ends] == [kind, "completed"], ends
    assert ends[0]["requeue"] is True and int(ends[0]["step"]) >= 10
    assert len(job.steps(1)) < STEPS  # attempt 1 resumed, it did not start over
    assert job.steps(1)[0]["step"] == int(ends[0]["step"]) + 1
    assert job.losses() == ref.losses()  # every step's loss, bit for bit
    assert job.digests() == ref.digests()  # the final weights of both ranks


def _trained(job: Job) -> tuple[list[dict], list[dict]]:
    """The ends and starts of the attempts that ran, after checking that any attempt the
    helper moved (Slurm placed it on an excluded node) was on one, and ran nothing."""
    ends, starts = job.ends(), job.starts()
    moved = {e["attempt"] for e in ends if e["kind"] == "moved"}
    for s in starts:
        if s["attempt"] in moved:
            assert s["nodes"] in s["exclude"].split(","), job.records()
            assert not job.steps(s["attempt"])
    return ([e for e in ends if e["attempt"] not in moved], [s for s in starts if s["attempt"] not in moved])


def test_stalled_rank_is_ended_named_excluded_and_the_job_finishes(runs):
    job = runs["stall"]
    assert job.final_state() == "COMPLETED"
    ends, starts = _trained(job)
    assert [e["kind"] for e in ends] == ["stall", "completed"], job.records()
    node = ends[0]["node"]
    assert node and node == starts[0]["nodes"]
    assert "rank 1 on " + node in ends[0]["reason"] and "step 7" in ends[0]["reason"]
    assert starts[1]["exclude"] == node and starts[1]["nodes"] != node
    # detected within stall_timeout + the watchdog's poll period (stall_timeout/4) + 1 s of clock granularity
    stall = (job.res / "stall-a0").read_text().split()
    age, detected = int(stall[3]), int(stall[6])
    assert STALL_TIMEOUT < age <= STALL_TIMEOUT + STALL_TIMEOUT // 4 + 1
    # and the attempt has ended (step killed, record written) within KILL_BOUND of the detection
    last_beat = detected - age
    assert ends[0]["t"] - last_beat <= STALL_TIMEOUT + STALL_TIMEOUT // 4 + 1 + KILL_BOUND
    assert job.losses() == runs["ref"].losses()


def test_max_restarts_exhausted_fails_with_a_summary_and_nothing_left(runs):
    job = runs["exhausted"]
    assert job.final_state() == "FAILED"
    ends = job.ends()
    assert [(e["kind"], e["requeue"]) for e in ends] == [("timelimit", True), ("timelimit", False)]
    summary = (job.res / "summary.txt").read_text()
    assert "gave up after 2 attempt(s)" in summary
    assert "attempt 0: time-limit warning" in summary and "attempt 1: time-limit warning" in summary
    assert "max_restarts (1) reached" in summary
    assert summary in next(job.dir.glob("sbatch_*.out")).read_text()
    assert not job.queue_state()
    assert _run(["pgrep", "-f", str(job.dir)]).returncode == 1  # no process of the job is left


@pytest.mark.cluster_alone  # a node marked down ends every job on it
@pytest.mark.parametrize("back_at_once", [False, True], ids=["stays-down", "back-at-once"])
def test_node_marked_down_under_a_running_job(tmp_path, slurm_cluster, back_at_once):
    """``back-at-once``: the node returns to service a moment later, as ReturnToService=2 does
    at its next ping; the attempt must still be seen as a node failure and the node excluded,
    or the next attempt lands on it while the old one is still there (Slurm then drains it)."""
    home = Home(tmp_path, slurm_cluster)
    job = home.submit("res")
    node = ""
    try:
        _wait(lambda: len(job.steps(0)) >= 5, 300, "attempt 0 to train")
        node = _run(["squeue", "-h", "-j", job.id, "-o", "%N"]).stdout.strip()
        assert node in slurm_cluster.nodes
        down = _run(["scontrol", "update", f"nodename={node}", "state=down", "reason=nemotron-e2e-resilience"])
        assert down.returncode == 0, down.stderr
        if back_at_once:
            assert _run(["scontrol", "update", f"nodename={node}", "state=resume"]).returncode == 0
        _wait(lambda: _finished(job), 420, "the job to finish on the other node",
              lambda: f"queue: {_run(['squeue', '-h', '-j', job.id, '-o', '%T %r %N']).stdout.strip()!r}; "
                      f"records: {job.records()}")
    finally:
        if node:
            _run(["scontrol", "update", f"nodename={node}", "state=resume"])
        _run(["scancel", job.id])
    assert job.final_state() == "COMPLETED"
    ends, starts = _trained(job)
    assert [e["kind"] for e in ends] == ["node_fail", "completed"], job.records()
    assert ends[0]["node"] == node
    assert starts[1]["exclude"] == node and starts[1]["nodes"] != node
    status = home.nemotron("jobs", "status", job.id)
    assert f"attempt 0 on {node}" in status.stdout and "-> requeued" in status.stdout
    listing = home.nemotron("jobs", "list")
    assert "ATTEMPTS" in listing.stdout and f": node_fail {node}" in listing.stdout


def test_requeue_from_inside_excludes_the_node_though_slurm_terms_every_process(tmp_path, slurm_cluster):
    """``scontrol requeue`` makes Slurm send TERM to every process of the job, the helper's own
    short-lived commands included; the exclusion that follows must still reach Slurm. Several
    jobs at once, since which command the TERM lands on is a matter of timing."""
    (tmp_path / "resilience.sh").write_text(resilience.script_text())
    body = f"""#!/bin/bash
export NR_DIR={tmp_path}/r$SLURM_JOB_ID NR_MAX_RESTARTS=3 NR_STALL_TIMEOUT=0 NR_STARTUP_TIMEOUT=60 NR_MAX_EXCLUDED=2
mkdir -p "$NR_DIR"
. {tmp_path}/resilience.sh
trap 'nemotron_on_signal TERM' TERM
[ "${{SLURM_RESTART_COUNT:-0}}" -gt 0 ] && exit 0
_nr_exclude "$SLURMD_NODENAME"
_nr_requeue false
"""
    (tmp_path / "job.sh").write_text(body)
    ids = [slurm_cluster.sbatch("--requeue", "-t", "5", "-o", str(tmp_path / "%j.out"), str(tmp_path / "job.sh"))
           for _ in range(10)]
    try:
        def requeued(job_id: str) -> bool:
            show = _show(job_id)
            return "JobState=PENDING" in show and "Restarts=1" in show
        _wait(lambda: all(requeued(i) for i in ids), 120, "every job to requeue itself",
              lambda: "; ".join(f"{i}: {_show(i)[:200]}" for i in ids))
        for job_id in ids:
            node = (tmp_path / f"r{job_id}" / "excluded").read_text().strip()
            assert node in slurm_cluster.nodes
            assert f"ExcNodeList={node} " in _show(job_id), (tmp_path / f"{job_id}.out").read_text()
    finally:
        _run(["scancel", *ids])


def _show(job_id: str) -> str:
    return _run(["scontrol", "show", "job", "-o", job_id]).stdout


def test_jobs_list_over_50_jobs_is_one_accounting_call_and_unknown_is_unknown(tmp_path, slurm_cluster):
    """51 recorded jobs (50 real ones, one accounting never had): one sacct, at most one squeue."""
    ids = [slurm_cluster.sbatch("--wrap", "true", "-o", "/dev/null", "-t", "1") for _ in range(50)]
    gone = "2147000000"  # no such job in the queue or in accounting
    # readiness, not a sleep: slurmdbd records new jobs a moment after sbatch returns, and a
    # job that already ended is in neither squeue nor (yet) sacct until then
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        known = _run(["sacct", "-n", "-X", "-P", "-o", "JobID", "-j", ",".join(ids)]).stdout.split()
        if set(ids) <= set(known):
            break
        time.sleep(0.5)
    home, shims, calls = tmp_path / "home", tmp_path / "bin", tmp_path / "calls"
    (home / "jobs").mkdir(parents=True)
    shims.mkdir()
    for tool in ("sacct", "squeue"):
        real = _run(["sh", "-c", f"command -v {tool}"]).stdout.strip()
        (shims / tool).write_text(f"#!/bin/sh\necho {tool} >> {calls}\nexec {real} \"$@\"\n")
        (shims / tool).chmod(0o755)
    with open(home / "jobs" / "submissions.jsonl", "w") as f:
        for i, job_id in enumerate([*ids, gone]):
            f.write(json.dumps({"v": 1, "job_id": job_id, "name": f"j{i}", "job_dir": str(tmp_path / f"d{i}"),
                                "submitted_at": f"2025-01-01T00:{i // 60:02d}:{i % 60:02d}Z"}) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(home), PATH=f"{shims}:{os.environ['PATH']}", COLUMNS="250")
    proc = subprocess.run([str(NEMOTRON), "jobs", "list", "-n", "0", "--json"], env=env, text=True,
                          capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    made = calls.read_text().split()
    assert made.count("sacct") == 1 and made.count("squeue") <= 1, made
    rows = {r["job_id"]: r for r in json.loads(proc.stdout)}
    assert len(rows) == 51 and rows[gone]["state"] == "UNKNOWN"
    assert all(rows[i]["state"] != "UNKNOWN" for i in ids)
