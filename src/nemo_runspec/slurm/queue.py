"""What Slurm says about a job: ``squeue`` while queued or running, ``sacct`` at the end."""

from __future__ import annotations

import time
from collections.abc import Callable

from nemo_runspec.slurm.remote import Remote

TERMINAL_STATES = {
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL",
    "PREEMPTED", "BOOT_FAIL", "DEADLINE", "REVOKED",
}


def squeue_state(remote: Remote, job_id: str) -> tuple[str, str, str] | None:
    """``(state, reason, nodes)`` from squeue, or None once the job left the queue."""
    rc, out, _ = remote.run(f"squeue -h -j {job_id} -o '%T|%r|%N'")
    line = out.strip().splitlines()[0] if rc == 0 and out.strip() else ""
    if not line:
        return None
    state, _, rest = line.partition("|")
    reason, _, nodes = rest.partition("|")
    return state.strip(), reason.strip(), nodes.strip()


def squeue_start(remote: Remote, job_id: str) -> str | None:
    """Estimated start time from ``squeue --start`` (None when unknown)."""
    rc, out, _ = remote.run(f"squeue --start -h -j {job_id} -o '%S'")
    val = out.strip()
    return val if rc == 0 and val and val not in ("N/A", "Unknown") else None


def sacct_info(remote: Remote, job_id: str) -> dict[str, str] | None:
    """``State, ExitCode, Start, End, NodeList`` of the job allocation from sacct."""
    rc, out, _ = remote.run(
        f"sacct -n -P -X -j {job_id} -o JobID,State,ExitCode,Start,End,NodeList"
    )
    for line in out.strip().splitlines() if rc == 0 else []:
        parts = line.split("|")
        if len(parts) >= 6 and parts[0] == str(job_id):
            return {"State": parts[1].split()[0], "ExitCode": parts[2], "Start": parts[3],
                    "End": parts[4], "NodeList": parts[5]}
    return None


def exit_code_from_sacct(state: str, exit_code: str) -> int:
    """Process-style exit code: ``N:0`` -> N, ``0:S`` -> 128+S; non-COMPLETED never 0."""
    code, _, sig = exit_code.partition(":")
    try:
        n, s = int(code or 0), int(sig or 0)
    except ValueError:
        n, s = 1, 0
    value = n if n else (128 + s if s else 0)
    if state == "COMPLETED":
        return value
    return value or 1


# --------------------------------------------------------------------------- submission


def final_sacct_info(remote: Remote, job_id: str, *, attempts: int = 30,
                     on_wait: Callable[[], None] | None = None) -> dict[str, str] | None:
    """sacct's record of a job that left the queue, once it shows a terminal state
    (accounting may lag a little behind squeue); None if it never does.
    ``on_wait`` runs between the one-second tries (e.g. to pump the log)."""
    for _ in range(attempts):
        info = sacct_info(remote, job_id)
        if info and info["State"] in TERMINAL_STATES:
            return info
        if on_wait is not None:
            on_wait()
        time.sleep(1)
    return None
