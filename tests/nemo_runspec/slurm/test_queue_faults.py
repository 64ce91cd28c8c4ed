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

from nemo_runspec.errors import ConfigError
from nemo_runspec.slurm import monitor, queue
from nemo_runspec.slurm.limits import check_partition_limits, parse_sinfo, slurm_seconds, slurm_time
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


def test_parse_sinfo_adds_node_states_and_reads_limits():
    limits = parse_sinfo("p", "2|1-00:00:00|1-4\n3|1-00:00:00|1-4\n")
    assert (limits.nodes, limits.max_time, limits.max_job_nodes) == (5, 86400, 4)
    assert parse_sinfo("p", "2|infinite|1-infinite\n").max_time is None
    assert parse_sinfo("p", "") is None


def fake_sinfo(output: str, rc: int = 0):
    return lambda cmd: (rc, output, "") if cmd.startswith("sinfo -h -p") else (1, "", "unexpected")


@pytest.mark.parametrize(("nodes", "time_limit", "words"), [
    (3, None, "asks for nodes=3 but partition p has 2 node(s)"),
    (2, "2-00:00:00", "asks for time=2-00:00:00 but partition p allows at most 1-00:00:00"),
])
def test_a_job_its_partition_can_never_run_is_refused(nodes, time_limit, words):
    with pytest.raises(ConfigError) as err:
        check_partition_limits(fake_sinfo("2|1-00:00:00|1-infinite\n"), partition="p", nodes=nodes,
                               time_limit=time_limit, source="job demo")
    assert words in str(err.value)


def test_a_per_job_node_maximum_is_named():
    with pytest.raises(ConfigError, match="allows at most 2 node"):
        check_partition_limits(fake_sinfo("8|infinite|1-2\n"), partition="p", nodes=4, time_limit=None)


@pytest.mark.parametrize("run", [fake_sinfo("", rc=1), fake_sinfo("garbage\n"), fake_sinfo("")])
def test_nothing_is_checked_when_sinfo_cannot_say(run):
    check_partition_limits(run, partition="p", nodes=99, time_limit="99-00:00:00")


def test_within_limits_passes():
    check_partition_limits(fake_sinfo("2|1-00:00:00|1-infinite\n"), partition="p", nodes=2, time_limit="23:59:00")
    assert slurm_seconds(slurm_time(86400)) == 86400


def test_following_a_log_stops_at_a_job_that_can_never_start(tmp_path, monkeypatch):
    from nemo_runspec.slurm.jobs import follow_log

    install(monkeypatch, Script({"squeue -h": [(0, "PENDING|PartitionTimeLimit|\n", "")]}))
    final = follow_log(local_remote(), "9", str(tmp_path / "log"), lambda b: None, poll=0)
    assert final.state == "PENDING" and "can never start: Slurm says PartitionTimeLimit" in final.note
    assert "nemotron jobs cancel 9" in final.note
