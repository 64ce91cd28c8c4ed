"""nemo_runspec.runtime.ended: what a job that wrote no outcome line said, and the summary of a run here."""

from __future__ import annotations

from pathlib import Path

from nemo_runspec.runtime import ended
from nemo_runspec.runtime.outcome import MARKER

LOGS = Path(__file__).parents[1] / "slurm" / "logs"


def _lines(case: str, *, without_outcome: bool = False) -> list[str]:
    lines = (LOGS / case / "log.out").read_text().splitlines()
    return [ln for ln in lines if not (without_outcome and MARKER in ln)]


def test_a_success_without_an_outcome_line_is_said_by_the_jobs_last_line_not_by_the_noise_after_it():
    """A real two-node log with its outcome line taken out: after the job's last line come
    torch's teardown warnings and C++ frames, which are not what the job said."""
    lines = _lines("preflight_passed_two_nodes", without_outcome=True)
    assert "frame #" in lines[-3] or "[c10d]" in "".join(lines[-25:])  # the noise is there
    said = ended.derive("COMPLETED", 0, lines)
    assert (said.ok, said.exit_code, said.source) == (True, 0, "log")
    assert said.message == "preflight passed: 2 rank(s) on 2 node(s), backend gloo"  # without "[default0]:"
    ending = ended.Ending(job_id="64", state="COMPLETED", exit_code=0, outcome=said)
    assert ended.state_line(ending) == ("job 64: COMPLETED (exit code 0); the job wrote no outcome line: "
                                        "the line above is the last line in its log")


def test_a_success_that_printed_nothing_is_done():
    said = ended.derive("COMPLETED", 0, ["", "+ echo hi", "   "])
    assert (said.message, said.source) == ("done", "exit code")


def test_a_run_here_reads_the_outcome_line_it_printed():
    lines = _lines("pretrain_failed_two_nodes")
    ending = ended.of_output("20261128-065107-2b112cf6", 2, lines)
    assert ending.outcome.source == "job" and ending.outcome.message.startswith("error: training data not found")
    assert ended.state_line(ending).startswith("job 20261128-065107-2b112cf6: FAILED (exit code 2")


def test_a_run_here_without_an_outcome_line_says_its_last_error_and_an_interrupt_is_named():
    lines = _lines("user_exception_torchrun")
    ending = ended.of_output("x", 1, lines)
    assert ending.outcome.message == "ZeroDivisionError: division by zero" and ending.outcome.source == "log"
    assert ended.of_output("x", 130, ["interrupted: stopping the job"], interrupted=True).state == "INTERRUPTED"
