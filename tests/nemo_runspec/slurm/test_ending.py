"""nemo_runspec.slurm.ending: the end-of-job summary, from the logs of real jobs of the local
cluster (tests/nemo_runspec/slurm/logs/) placed as a job dir, read through a local Remote."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from nemo_runspec.slurm import ending as E
from nemo_runspec.slurm.remote import Remote

LOGS = Path(__file__).parent / "logs"
LOCAL = Remote.for_profile({"tunnel": "local"})


def _job(tmp_path: Path, case: str, job_id: str = "62") -> SimpleNamespace:
    for name in ("log.out", "sbatch.out", "sbatch.sh"):
        shutil.copy(LOGS / case / name, tmp_path / name)
    (tmp_path / f"log-x_{job_id}_0.out").write_bytes((LOGS / case / "log.out").read_bytes())
    return SimpleNamespace(job_id=job_id, log_path=str(tmp_path / f"log-x_{job_id}_0.out"),
                           sbatch_log_path=str(tmp_path / "sbatch.out"), sbatch_path=str(tmp_path / "sbatch.sh"),
                           recipe="user/x")


def _printed(ending: E.Ending, **kw) -> list[str]:
    buf = io.StringIO()
    E.print_ending(ending, Console(file=buf, width=300, color_system=None), **kw)
    return buf.getvalue().splitlines()


def _own_line(case: str, startswith: str) -> str:
    line = next(ln for ln in (LOGS / case / "log.out").read_text().splitlines() if startswith in ln)
    return line[line.index(startswith):]


def _noise_free(lines: list[str]) -> None:
    for line in lines:
        for needle in ("frame #", "[c10d]", "ChildFailedError", "Root Cause", "| +", "job exited with code"):
            assert needle not in line, line


def test_a_failure_in_our_code_shows_the_jobs_error_line_first(tmp_path):
    ending = E.read_ending(LOCAL, _job(tmp_path, "pretrain_failed_two_nodes"), state="FAILED", exit_code=15)
    lines = _printed(ending)
    assert lines[0] == _own_line("pretrain_failed_two_nodes", "error: training data not found")
    assert lines[1] == "job 62: FAILED (exit code 15; rank 0 exited 2)"
    _noise_free(lines)
    assert "  | srun: error: n2: task 1: Exited with exit code 1" in lines  # the batch log's reason
    folded = next(ln for ln in lines if ln.startswith("  (folded: "))
    assert "lines of torchrun's failure report" in folded and "lines of shell tracing" in folded
    assert lines[-2:] == [f"  log:       {tmp_path / 'log-x_62_0.out'}", f"  batch log: {tmp_path / 'sbatch.out'}"]


def test_a_success_is_its_summary_and_the_state_nothing_else(tmp_path):
    ending = E.read_ending(LOCAL, _job(tmp_path, "preflight_passed_two_nodes", "64"), state="COMPLETED",
                           exit_code=0)
    assert _printed(ending) == ["preflight passed: 2 rank(s) on 2 node(s), backend gloo",
                                "job 64: COMPLETED (exit code 0)",
                                f"  log:       {tmp_path / 'log-x_64_0.out'}"]
    assert ending.outcome.figures == {"ranks": 2, "nodes": 2, "backend": "gloo", "allreduce_seconds": 0.021,
                                      "failures": 0}


def test_a_users_exception_is_the_last_error_of_its_log(tmp_path):
    ending = E.read_ending(LOCAL, _job(tmp_path, "user_exception_torchrun", "107"), state="FAILED", exit_code=1)
    lines = _printed(ending)
    assert lines[0] == "ZeroDivisionError: division by zero"
    assert lines[1] == ("job 107: FAILED (exit code 1); the job wrote no outcome line: "
                        "the line above is the last error in its log")
    assert ending.outcome.recipe == "user/x" and ending.outcome.source == "log"
    assert "  | [default0]:Traceback (most recent call last):" in lines  # the user's own traceback stays
    _noise_free(lines)


@pytest.mark.parametrize(("case", "state", "said"), [
    ("time_limit", "TIMEOUT", "Slurm stopped the job at its time limit: "
                              "*** JOB 108 ON n1 CANCELLED AT 2026-11-28T05:28:07 DUE TO TIME LIMIT ***"),
    ("scancel", "CANCELLED", "the job was cancelled (scancel, or by an administrator): "
                             "*** JOB 114 ON n1 CANCELLED AT 2026-11-28T05:28:19 ***"),
])
def test_a_job_slurm_ended_is_slurms_own_line(tmp_path, case, state, said):
    ending = E.read_ending(LOCAL, _job(tmp_path, case, "108"), state=state, exit_code=1)
    lines = _printed(ending)
    assert lines[0] == said
    assert lines[1] == f"job 108: {state} (exit code 1); the line above is Slurm's, the job wrote no outcome line"
    _noise_free(lines)


def test_without_any_log_the_summary_still_says_the_state(tmp_path):
    job = SimpleNamespace(job_id="9", log_path=str(tmp_path / "none.out"), sbatch_log_path=None, sbatch_path=None)
    ending = E.read_ending(LOCAL, job, state="NODE_FAIL", exit_code=1)
    assert _printed(ending)[:2] == ["a node of the job failed", "job 9: NODE_FAIL (exit code 1); the line above "
                                    "is Slurm's, the job wrote no outcome line"]
    ending = E.read_ending(LOCAL, job, state="FAILED", exit_code=3)
    assert ending.outcome.message == "exit code 3" and ending.outcome.source == "exit code"


def test_debug_shows_the_lines_as_they_are_and_secrets_are_masked(tmp_path):
    job = _job(tmp_path, "pretrain_failed_two_nodes")
    ending = E.read_ending(LOCAL, job, state="FAILED", exit_code=15, debug=True)
    lines = _printed(ending, secrets=["nonexistent"])
    assert any(ln.startswith("  | + ") for ln in lines)  # the tracing is there
    assert not ending.folded and not any(ln.startswith("  (folded") for ln in lines)
    assert not any("nonexistent" in ln for ln in lines) and any("***REDACTED***" in ln for ln in lines)


def test_the_latest_attempts_log_is_read(tmp_path):
    base = tmp_path / "log-x_7_0.out"
    for attempt, line in ((0, "stopped"), (1, "also stopped"), (2, "final")):
        (tmp_path / f"log-x_7_{attempt}.out").write_text(f"[pretrain] {line}\n")
    (tmp_path / "log-x_7_0.out.bak").write_text("x")
    assert E.latest_attempt_log(LOCAL, str(base)) == str(tmp_path / "log-x_7_2.out")
    assert E.latest_attempt_log(LOCAL, str(tmp_path / "other.log")) == str(tmp_path / "other.log")


def test_only_the_end_of_a_long_log_is_read(tmp_path):
    log = tmp_path / "big.out"
    log.write_text("x" * 100 + "\n" + "step\n" * 200_000 + "last\n")
    lines = E.read_tail(LOCAL, str(log), size=1000)
    assert lines[-1] == "last" and set(lines[:-1]) == {"step"} and len(lines) < 201
