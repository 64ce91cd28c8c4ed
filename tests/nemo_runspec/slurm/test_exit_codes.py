"""The exit code `--run` ends with, from sacct's final record (docs/execution.md, "Exit codes").

``ExitCode N:S``: ``N`` when non-zero, else ``128+S`` when a signal killed the job,
else 0; any final state other than COMPLETED is never 0.
"""

from __future__ import annotations

import signal

import pytest

from nemo_runspec.slurm.queue import exit_code_from_sacct

# every terminal state sacct reports besides COMPLETED
NOT_COMPLETED = ["FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL",
                 "DEADLINE", "PREEMPTED", "REVOKED"]


@pytest.mark.parametrize(("code", "expected"), [("0:0", 0), ("3:0", 3), ("255:0", 255)])
def test_completed_job_exits_with_its_code(code: str, expected: int) -> None:
    assert exit_code_from_sacct("COMPLETED", code) == expected


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGSEGV])
@pytest.mark.parametrize("state", ["COMPLETED", "FAILED", "CANCELLED"])
def test_killed_by_a_signal_is_128_plus_signal(state: str, sig: signal.Signals) -> None:
    assert exit_code_from_sacct(state, f"0:{int(sig)}") == 128 + int(sig)


def test_the_code_wins_over_the_signal() -> None:
    assert exit_code_from_sacct("FAILED", "2:15") == 2


@pytest.mark.parametrize("state", NOT_COMPLETED)
def test_every_other_final_state_is_never_0(state: str) -> None:
    assert exit_code_from_sacct(state, "0:0") == 1
    assert exit_code_from_sacct(state, "") == 1
    assert exit_code_from_sacct(state, "7:0") == 7


@pytest.mark.parametrize("code", ["", ":", "0"])
def test_missing_parts_count_as_0(code: str) -> None:
    assert exit_code_from_sacct("COMPLETED", code) == 0


def test_unreadable_code_is_a_failure() -> None:
    assert exit_code_from_sacct("COMPLETED", "x:y") == 1


