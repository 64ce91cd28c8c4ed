"""What Slurm says about a job: ``squeue`` while queued or running, ``sacct`` at the end."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from nemo_runspec.errors import ExecutionError
from nemo_runspec.slurm.remote import Remote

TERMINAL_STATES = {
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL",
    "PREEMPTED", "BOOT_FAIL", "DEADLINE", "REVOKED",
}

#: Pending reasons that never resolve by themselves: the job asks for more than
#: its partition, account or QOS will ever give it (Slurm's reason codes).
NEVER_STARTS = {
    "PartitionNodeLimit": "it asks for more nodes than its partition allows",
    "PartitionTimeLimit": "its time limit is above its partition's",
    "PartitionConfig": "its partition cannot run it as asked (account, QOS or node configuration)",
    "BadConstraints": "its constraints match no node",
    "InvalidAccount": "its account is not valid",
    "InvalidQOS": "its QOS is not valid",
    "AccountNotAllowed": "its account may not use this partition",
    "QOSMaxNodePerJobLimit": "it asks for more nodes than its QOS allows a job",
    "QOSMaxWallDurationPerJobLimit": "its time limit is above what its QOS allows a job",
    "QOSMaxCpuPerJobLimit": "it asks for more CPUs than its QOS allows a job",
    "QOSMaxGRESPerJob": "it asks for more GPUs than its QOS allows a job",
    "DependencyNeverSatisfied": "a job it depends on failed",
}

#: Seconds ``squeue`` may keep failing before following gives up (Slurm
#: controllers restart, networks blink); ``NEMOTRON_SLURM_RETRY_SECONDS`` overrides.
RETRY_SECONDS = 120.0


class SchedulerUnreachable(ExecutionError):
    """squeue kept failing for longer than the retry bound; the job may still be running."""


def _retry_seconds() -> float:
    try:
        return float(os.environ.get("NEMOTRON_SLURM_RETRY_SECONDS", RETRY_SECONDS))
    except ValueError:
        return RETRY_SECONDS


def squeue_state(remote: Remote, job_id: str, *, retry_for: float | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 on_retry: Callable[[str], None] | None = None) -> tuple[str, str, str] | None:
    """``(state, reason, nodes)`` from squeue, or None once the job left the queue.

    A failing ``squeue`` (other than Slurm saying it does not know the job) is
    retried with backoff (1, 2, 4 ... 15 s) for up to ``retry_for`` seconds
    (default :data:`RETRY_SECONDS`); ``on_retry`` is told why (the controller could
    not be reached, in squeue's words) before each retry. Then
    :class:`SchedulerUnreachable` is raised, naming the job, the last state Slurm
    gave for it and how to follow it later. It never means the job ended.
    """
    budget = _retry_seconds() if retry_for is None else retry_for
    waited, delay = 0.0, 1.0
    while True:
        rc, out, err = remote.run(f"squeue -h -j {job_id} -o '%T|%r|%N'")
        if rc == 0:
            line = out.strip().splitlines()[0] if out.strip() else ""
            if not line:
                return None
            state, _, rest = line.partition("|")
            reason, _, nodes = rest.partition("|")
            from nemo_runspec.slurm import last_seen

            last_seen.remember(last_seen.cluster_name(remote), [{"job_id": job_id, "state": state.strip(),
                                                       "reason": reason.strip(), "nodes": nodes.strip()}])
            return state.strip(), reason.strip(), nodes.strip()
        if "invalid job id" in (err + out).lower():  # purged from the controller: it ended
            return None
        why = " ".join((err or out).split()) or f"exit status {rc}"
        if waited >= budget:
            from nemo_runspec.slurm import last_seen

            last = last_seen.describe(last_seen.recall(last_seen.cluster_name(remote), job_id))
            raise SchedulerUnreachable(
                f"the Slurm controller (slurmctld) could not be reached for {waited:.0f}s while following job "
                f"{job_id} (squeue: {why}); last known: {last}; the job may still be running",
                hint=f"follow it later with: nemotron jobs logs -f {job_id}   (NEMOTRON_SLURM_RETRY_SECONDS "
                     "sets how long to retry)")
        if on_retry is not None:
            on_retry(f"the Slurm controller (slurmctld) could not be reached (squeue: {why}); retrying for up "
                     f"to {budget:.0f}s")
        step = min(delay, 15.0, max(budget - waited, 0.1))
        sleep(step)
        waited += step
        delay *= 2


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


def sacct_problem(remote: Remote, job_id: str) -> str:
    """Why ``sacct`` says nothing final about ``job_id``: accounting cannot be reached (its
    words), there is none, or it has no record yet."""
    rc, out, err = remote.run(f"sacct -n -P -X -j {job_id} -o JobID,State")
    text = " ".join((err or out).split())
    if rc != 0 and "accounting storage is disabled" in text:
        return "this cluster keeps no Slurm accounting (slurmdbd), which --run needs to learn how a job ended"
    if rc != 0:
        return f"Slurm accounting (slurmdbd) could not be reached (sacct: {text or f'exit status {rc}'})"
    return "Slurm accounting (slurmdbd) has no final record of it yet"
