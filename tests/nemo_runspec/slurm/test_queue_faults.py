"""What following a job does when Slurm misbehaves or can never run it.

Slurm's command line is faked at its boundary (``Remote.run``, where squeue,
sacct and scancel run) with scripted answers; the real answers these scripts
copy (``PartitionNodeLimit`` for too many nodes, ``Invalid job id specified``
for a purged job) are checked on the cluster in tests/e2e/test_slurm_submit.py.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from nemo_runspec.slurm import monitor, queue
from nemo_runspec.slurm.prepared import PreparedJob, SubmittedJob
from nemo_runspec.slurm.remote import Remote


def _submitted(tmp_path: Path) -> SubmittedJob:
    prepared = PreparedJob(name="pretrain", title="pretrain", exp_id="pretrain_1", base_dir=tmp_path,
                           executor=None, script="train.py", args=[], values={"executor": "slurm"},
                           mode="run")
    return SubmittedJob(job_id="4242", job_dir=prepared.job_dir, name="pretrain", prepared=prepared,
                        log_path=str(tmp_path / "log.out"), sbatch_log_path=str(tmp_path / "sbatch.out"),
                        sbatch_path=prepared.sbatch_path)


class Script:
    """Answers for each command, by prefix, in order (the last one repeats); records every command."""

    def __init__(self, answers: dict[str, list[tuple[int, str, str]]]) -> None:
        self.answers, self.ran = answers, []

    def __call__(self, _remote: Remote, cmd: str) -> tuple[int, str, str]:
        self.ran.append(cmd)
        for prefix in sorted(self.answers, key=len, reverse=True):
            if cmd.startswith(prefix):
                seq = self.answers[prefix]
                return seq.pop(0) if len(seq) > 1 else seq[0]
        return 0, "", ""


def install(monkeypatch, script: Script) -> Script:
    monkeypatch.setattr(Remote, "run", lambda self, cmd: script(self, cmd))
    return script


def local_remote() -> Remote:
    return Remote.for_profile({"tunnel": "local"})


# --- transient squeue failures -----------------------------------------------------------


def test_a_failing_squeue_is_retried_then_answers(monkeypatch):
    script = Script({"squeue": [(1, "", "slurm_load_jobs error: Socket timed out on send/recv"),
                                (1, "", "Unable to contact slurm controller (connect failure)"),
                                (0, "RUNNING|None|n1\n", "")]})
    install(monkeypatch, script)
    slept: list[float] = []
    assert queue.squeue_state(local_remote(), "7", retry_for=60, sleep=slept.append) == ("RUNNING", "None", "n1")
    assert slept == [1.0, 2.0]  # backoff


def test_squeue_failing_past_the_bound_names_the_job_and_never_claims_it_ended(monkeypatch):
    install(monkeypatch, Script({"squeue": [(1, "", "Unable to contact slurm controller")]}))
    slept: list[float] = []
    with pytest.raises(queue.SchedulerUnreachable) as err:
        queue.squeue_state(local_remote(), "7", retry_for=20, sleep=slept.append)
    msg = str(err.value)
    assert "job 7" in msg and "may still be running" in msg and "Unable to contact slurm controller" in msg
    assert "nemotron jobs logs -f 7" in (err.value.hint or "")
    assert sum(slept) == pytest.approx(20) and max(slept) <= 15


def test_a_purged_job_has_left_the_queue_at_once(monkeypatch):
    install(monkeypatch, Script({"squeue": [(1, "", "slurm_load_jobs error: Invalid job id specified")]}))
    slept: list[float] = []
    assert queue.squeue_state(local_remote(), "7", retry_for=60, sleep=slept.append) is None
    assert slept == []


def test_the_retry_bound_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("NEMOTRON_SLURM_RETRY_SECONDS", "3")
    install(monkeypatch, Script({"squeue": [(1, "", "timeout")]}))
    slept: list[float] = []
    with pytest.raises(queue.SchedulerUnreachable):
        queue.squeue_state(local_remote(), "7", sleep=slept.append)
    assert sum(slept) == pytest.approx(3)


# --- a job that can never start --------------------------------------------------------------


@pytest.mark.parametrize("reason", ["PartitionNodeLimit", "PartitionTimeLimit", "QOSMaxNodePerJobLimit",
                                    "InvalidAccount"])
def test_a_job_that_can_never_start_is_cancelled_with_the_reason(tmp_path, monkeypatch, reason):
    script = Script({"squeue -h": [(0, f"PENDING|{reason}|\n", "")]})
    install(monkeypatch, script)
    sub = _submitted(tmp_path)
    buf = io.StringIO()
    code = monitor.follow(sub, console=Console(file=buf, width=300, color_system=None), poll=0)
    assert code == 1 and sub.returncode == 1 and sub.state == "CANCELLED"
    assert "scancel 4242" in script.ran
    shown = buf.getvalue()
    assert f"job 4242 can never start: Slurm says {reason}" in shown and "cancelled it" in shown


@pytest.mark.parametrize("reason", ["Priority", "Resources", "ReqNodeNotAvail, UnavailableNodes:n1", "BeginTime"])
def test_a_job_waiting_for_what_can_come_is_followed(tmp_path, monkeypatch, reason):
    # pending for a reason that resolves by itself, then it runs and ends
    script = Script({"squeue -h": [(0, f"PENDING|{reason}|\n", ""), (0, "RUNNING|None|n1\n", ""), (0, "", "")],
                     "sacct": [(0, "4242|COMPLETED|0:0|s|e|n1\n", "")]})
    install(monkeypatch, script)
    sub = _submitted(tmp_path)
    code = monitor.follow(sub, console=Console(file=io.StringIO(), width=300), poll=0)
    assert code == 0 and not any(c.startswith("scancel") for c in script.ran)


def test_the_estimated_start_is_asked_again_while_pending(tmp_path, monkeypatch):
    monkeypatch.setattr(monitor, "START_EVERY", 0.0)
    pending = (0, "PENDING|Priority|\n", "")
    script = Script({"squeue -h": [pending, pending, pending, (0, "", "")],
                     "squeue --start": [(0, "N/A\n", ""), (0, "N/A\n", ""), (0, "2026-11-25T18:00:00\n", "")],
                     "sacct": [(0, "4242|COMPLETED|0:0|s|e|n1\n", "")]})
    install(monkeypatch, script)
    buf = io.StringIO()
    monitor.follow(_submitted(tmp_path), console=Console(file=buf, width=300, color_system=None), poll=0)
    assert sum(c.startswith("squeue --start") for c in script.ran) == 3
    assert "estimated start 2026-11-25T18:00:00" in buf.getvalue()


# --- partition limits before submission ---------------------------------------------------------


