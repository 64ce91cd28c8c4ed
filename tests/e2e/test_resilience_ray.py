"""A resilient Ray job (``launch = "ray"``, ``nemotron nano3 rl``) on the local cluster, for real.

The tiny RL fallback (the driver on the Ray head node, 30 steps slowed by the
test-only NEMOTRON_TEST_STEP_DELAY) is submitted bare-metal with
``[PROFILE.resilience]`` and gets the time-limit warning from the test itself
(``scancel --batch --signal=USR1``, what Slurm does ``signal_before`` seconds
before the limit). It must checkpoint, requeue itself, start a fresh Ray cluster
and resume from that checkpoint in the same job id. One job: Slurm holds a
requeued job for its credential lifetime (120 s by default, 10 s on the test
cluster) before the next attempt.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.nemotron_cli import NEMOTRON

from .helpers import cli_env
from .test_resilience import Job, _finished, _run, _wait

pytestmark = [pytest.mark.slurm]

STEPS = 30
# policy.model_name: the SFT model NeMo-RL would start from; the fallback does not read it
TRAIN = ("nano3", "rl", "-c", "tiny", "policy.model_name=null", f"fallback.max_steps={STEPS}",
         "fallback.save_interval=10", "fallback.eval_interval=0")


class Home:
    """A NEMOTRON_HOME, an env.toml with a resilient profile, and the tiny RL data."""

    def __init__(self, root: Path, cluster) -> None:
        self.root = root
        self.env = cli_env(root, cluster, """
            nodes = 1
            ray_timeout = 240
            env_vars = { NEMOTRON_TEST_STEP_DELAY = "0.3" }

            [res.resilience]
            max_restarts = 2
            signal_before = 60
            stall_timeout = 60
            startup_timeout = 300
        """, name="res", time="00:15:00")
        prep = self.nemotron("nano3", "data", "prep", "rl", "-c", "tiny")
        assert prep.returncode == 0, prep.stderr[-2000:]

    def nemotron(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(NEMOTRON), *args], env=self.env, cwd=self.root, text=True,
                              capture_output=True, timeout=600, stdin=subprocess.DEVNULL)

    def submit(self, profile: str) -> tuple[Job, Path]:
        """The job and its log (a Ray job's batch log, shared by its attempts)."""
        proc = self.nemotron(*TRAIN, "--batch", profile)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        info = json.loads(proc.stdout.strip().splitlines()[-1])
        return Job(info["job_id"], Path(info["job_dir"])), Path(info["log"])


@pytest.fixture(scope="module")
def run(tmp_path_factory, slurm_cluster) -> tuple[Home, Job, Path]:
    home = Home(tmp_path_factory.mktemp("resilience-ray"), slurm_cluster)
    job, log = home.submit("res")
    try:
        _wait(lambda: len(job.steps(0)) >= 12, 420, "attempt 0 to pass its step-10 checkpoint",
              lambda: f"queue: {job.queue_state()!r}; log: {log.read_text()[-1500:] if log.exists() else ''}")
        assert _run(["scancel", "--batch", "--signal=USR1", job.id]).returncode == 0
        _wait(lambda: _finished(job), 480, "the job to finish after its requeue",
              lambda: f"queue: {_run(['squeue', '-h', '-j', job.id, '-o', '%T %r']).stdout.strip()!r}; "
                      f"records: {job.records()}")
    finally:
        _run(["scancel", job.id])
    return home, job, log


def test_only_the_driver_srun_goes_through_the_helper(run):
    _, job, _ = run
    script = next(job.dir.parent.glob("*_sbatch.sh")).read_text()
    assert "#SBATCH --signal=B:USR1@60" in script
    assert "trap 'nemotron_on_signal USR1' USR1" in script and "nemotron_attempt_begin" in script
    assert not re.search(r"^srun\(\) \{", script, re.M)  # the raylets' and the probes' sruns stay plain
    assert re.search(r"^nemotron_srun_start --overlap .*\\\n  bash \"\$CLUSTER_DIR/driver.sh\"$", script, re.M)
    assert re.search(r"^  srun --overlap --nodes=1 --ntasks=1 -w \"\$node\" ", script, re.M)


def test_warning_checkpoints_requeues_and_resumes_in_a_fresh_ray_cluster(run):
    home, job, log = run
    assert job.final_state() == "COMPLETED"
    ends = job.ends()
    assert [e["kind"] for e in ends] == ["timelimit", "completed"], job.records()
    stopped_at = int(ends[0]["step"])
    assert ends[0]["requeue"] is True and ends[0]["exit_code"] == 75 and stopped_at >= 12
    assert [s["attempt"] for s in job.starts()] == [0, 1]
    # attempt 1 resumed from the stop checkpoint: it did not start over
    resumed = job.steps(1)
    assert resumed[0]["step"] == stopped_at + 1 and resumed[-1]["step"] == STEPS
    assert sorted(job.losses()) == list(range(1, STEPS + 1))
    text = log.read_text()
    assert re.search(rf"\[rl-smoke\] resumed from \S+step_{stopped_at:08d}\.pt at step {stopped_at}$", text, re.M)
    assert text.count("[ray] cluster ready") == 2  # each attempt started its own Ray cluster
    assert f"nemotron: requeued job {job.id} for attempt 1" in text
    assert "nemotron: attempt 1 ended: completed" in text
    status = home.nemotron("jobs", "status", job.id)
    assert "attempt 0 on " in status.stdout and "time-limit warning" in status.stdout, status.stdout
    assert not job.queue_state()
    assert _run(["pgrep", "-f", str(job.dir)]).returncode == 1  # no raylet or driver of the job is left
