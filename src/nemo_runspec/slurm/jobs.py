"""Recorded jobs, asked about again: their Slurm state, their logs, cancelling them.

What ``nemotron jobs`` does with a :class:`~nemo_runspec.slurm.ledger.Submission`:
reach its cluster the way it was submitted (:func:`remote_for`: here, or over
the SSH tunnel of its profile), ask Slurm about many jobs in one command per
cluster (:func:`query_states`: ``sacct`` when it answers, ``squeue`` for what
sacct does not know or when there is no accounting), read or follow its log
(:func:`follow_log`) and ``scancel`` it (:func:`cancel_jobs`).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nemo_runspec.errors import ExecutionError
from nemo_runspec.slurm.queue import TERMINAL_STATES, exit_code_from_sacct

if TYPE_CHECKING:
    from nemo_runspec.slurm.ledger import Submission
    from nemo_runspec.slurm.remote import Remote

#: Every state ``sacct``/``squeue`` report (long names), for ``--state`` checks.
SLURM_STATES = (
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "COMPLETING", "CONFIGURING", "DEADLINE", "FAILED",
    "NODE_FAIL", "OUT_OF_MEMORY", "PENDING", "PREEMPTED", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD",
    "RESIZING", "REVOKED", "RUNNING", "SIGNALING", "SPECIAL_EXIT", "STAGE_OUT", "STOPPED",
    "SUSPENDED", "TIMEOUT",
)
#: squeue's short codes for the common states.
SHORT_STATES = {
    "PD": "PENDING", "R": "RUNNING", "CG": "COMPLETING", "CF": "CONFIGURING", "CD": "COMPLETED",
    "F": "FAILED", "CA": "CANCELLED", "TO": "TIMEOUT", "OOM": "OUT_OF_MEMORY", "NF": "NODE_FAIL",
    "PR": "PREEMPTED", "S": "SUSPENDED", "BF": "BOOT_FAIL", "DL": "DEADLINE",
}
#: Not Slurm's: a job Slurm cannot tell about (left the queue, no accounting), a
#: pipe stage that was skipped, a cluster that could not be reached.
UNKNOWN, SKIPPED, UNREACHABLE = "UNKNOWN", "SKIPPED", "UNREACHABLE"
_CHUNK = 100


@dataclass
class JobState:
    """What Slurm says of one job. ``exit_code`` is process-style (``N``, or
    ``128+signal``; never 0 unless COMPLETED), set once sacct has the final state."""

    job_id: str
    state: str = UNKNOWN
    reason: str = ""
    nodes: str = ""
    exit_code: int | None = None
    #: sacct's ``ExitCode`` (``N:S``)
    raw_exit: str = ""
    start: str = ""
    end: str = ""
    #: ``sacct``, ``squeue`` or ``""`` (Slurm knows nothing of the job)
    source: str = ""
    note: str = ""
    #: whether sacct answered at all (False: no accounting on that cluster, or it is down)
    accounting: bool = True
    #: what could not be reached to ask about this job (the controller, accounting), in Slurm's words
    unreached: str = ""
    #: what Slurm said the last time it answered about this job (:mod:`~nemo_runspec.slurm.last_seen`)
    last_known: str = ""

    @property
    def finished(self) -> bool:
        """True once the job will not change any more."""
        return self.state in TERMINAL_STATES


def remote_for(sub: Submission) -> Remote:
    """Where ``sub`` runs, reached from here as it was at submission (an SSH tunnel is
    probed first, so a wrong key or a host that is down is one clear error)."""
    from nemo_runspec.slurm.remote import Remote

    values = sub.tunnel_values()
    remote = Remote.for_profile(values)
    if values.get("tunnel") == "ssh":
        from nemo_runspec.execution.tunnels import probe_tunnel
        from nemo_runspec.job.run_config import quiet_nemo_run

        probe_tunnel(values)
        with quiet_nemo_run():  # nemo-run would announce the connection on stdout
            remote.tunnel.connect()
    return remote


def tunnel_key(sub: Submission) -> tuple[Any, ...]:
    """Jobs with the same key are reached through the same connection."""
    if sub.tunnel != "ssh":
        return ("local",)
    return ("ssh", sub.profile if not sub.ssh else None, sub.env_file if not sub.ssh else None,
            *(str(sub.ssh.get(k) or "") for k in ("host", "user", "port", "identity")))


def by_connection(subs: Iterable[Submission]) -> list[list[Submission]]:
    """``subs`` grouped by :func:`tunnel_key` (in first-seen order): one connection per group."""
    groups: dict[tuple[Any, ...], list[Submission]] = {}
    for sub in subs:
        groups.setdefault(tunnel_key(sub), []).append(sub)
    return list(groups.values())


def describe_tunnel(sub: Submission) -> str:
    """``local`` or ``ssh user@host:port``."""
    if sub.tunnel != "ssh":
        return "local"
    ssh = sub.ssh
    if not ssh.get("host"):
        return f"ssh (profile {sub.profile})"
    user = f"{ssh['user']}@" if ssh.get("user") else ""
    port = f":{ssh['port']}" if ssh.get("port") else ""
    return f"ssh {user}{ssh['host']}{port}"


def close(remote: Remote) -> None:
    """Close the remote's SSH connection, if one was opened."""
    tunnel = getattr(remote, "_tunnel", None)
    if tunnel is not None:
        with contextlib.suppress(Exception):
            tunnel.cleanup()


def _chunks(ids: Sequence[str]) -> Iterable[list[str]]:
    for i in range(0, len(ids), _CHUNK):
        yield list(ids[i:i + _CHUNK])


#: sacct's words when the cluster keeps no accounting at all (not an outage)
NO_ACCOUNTING = "accounting storage is disabled"


def _first_error(text: str, rc: int) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errs = [ln for ln in lines if "error" in ln.lower()] or lines
    return errs[-1] if errs else f"exit status {rc}"


def _sacct(remote: Remote, ids: list[str]) -> tuple[dict[str, JobState] | None, str]:
    """sacct's records of ``ids``, and why sacct did not answer (``""`` when it did);
    the records are None when it did not (not installed, no accounting, slurmdbd down)."""
    rc, out, err = remote.run(f"sacct -n -P -X -j {','.join(ids)} "
                              "-o JobID,State,ExitCode,Reason,NodeList,Start,End")
    if rc != 0:
        return None, _first_error(err or out, rc)
    found: dict[str, JobState] = {}
    for line in out.splitlines():
        parts = line.split("|")
        # an array's tasks (168_3, 168_[4-7]) are kept under their own ids (nemo_runspec.sweep.states)
        if len(parts) < 7 or (parts[0] not in ids and parts[0].split("_", 1)[0] not in ids):
            continue
        state = (parts[1].split() or [UNKNOWN])[0]
        st = JobState(parts[0], state=state, raw_exit=parts[2], reason=_clean(parts[3]),
                      nodes=_clean(parts[4]), start=_clean(parts[5]), end=_clean(parts[6]), source="sacct")
        if st.finished:
            st.exit_code = exit_code_from_sacct(state, parts[2])
        found[parts[0]] = st
    return found, ""


def _clean(value: str) -> str:
    value = value.strip()
    return "" if value in ("None", "None assigned", "(null)", "Unknown", "N/A") else value


def _squeue(remote: Remote, ids: list[str]) -> tuple[dict[str, JobState], str]:
    """squeue's view of the ``ids`` still in the queue, and why squeue did not answer
    (``""`` when it did, or only said that the job left the queue)."""
    # squeue refuses a whole -j list when one id has left the queue long ago, so several
    # jobs are asked about with one call for all of this user's queued jobs (never one per job)
    select = f"-j {ids[0]}" if len(ids) == 1 else "--me"
    rc, out, err = remote.run(f"squeue -h {select} -o '%i|%T|%r|%N'")
    problem = "" if rc == 0 or "invalid job id" in (err + out).lower() else _first_error(err or out, rc)
    found: dict[str, JobState] = {}
    for line in out.splitlines() if rc == 0 else []:
        parts = line.strip().split("|")
        if len(parts) < 4 or (parts[0] not in ids and parts[0].split("_", 1)[0] not in ids):
            continue
        found[parts[0]] = JobState(parts[0], state=parts[1].strip(), reason=_clean(parts[2]),
                                   nodes=_clean(parts[3]), source="squeue")
    return found, problem



def query_states(remote: Remote, job_ids: Iterable[str], *, live: bool = False) -> dict[str, JobState]:
    """The state of each of ``job_ids`` on one cluster: one ``sacct`` (per hundred ids),
    then ``squeue`` for the jobs sacct does not know (a new job accounting has not
    seen yet, or no accounting at all); with ``live``, squeue also for unfinished
    jobs (its pending reason and node list are current). A job neither knows is
    :data:`UNKNOWN`, with a note saying why."""
    from nemo_runspec.slurm import last_seen

    ids = list(dict.fromkeys(str(j) for j in job_ids))
    states: dict[str, JobState] = {}
    sacct_works, sacct_error, squeue_error = True, "", ""
    for chunk in _chunks(ids):
        got, sacct_error = _sacct(remote, chunk)
        if got is None:
            sacct_works = False
            break
        states.update(got)
    arrays = {k.split("_", 1)[0] for k in states if "_" in k}  # answered through their tasks
    ask = [j for j in ids if j not in arrays and (j not in states or (live and not states[j].finished))]
    for chunk in _chunks(ask):
        found, squeue_error = _squeue(remote, chunk)
        for job_id, st in found.items():
            old = states.get(job_id)
            if old is not None and st.state in TERMINAL_STATES | {"COMPLETING"}:
                old.reason, old.nodes = st.reason or old.reason, st.nodes or old.nodes
                continue
            if old is not None:  # squeue is current: keep sacct's times
                st.start, st.end, st.raw_exit = old.start, old.end, old.raw_exit
            states[job_id] = st
    arrays |= {k.split("_", 1)[0] for k in states if "_" in k}
    cluster = last_seen.cluster_name(remote)
    last_seen.remember(cluster, [vars(st) for st in states.values() if st.source])
    unreached = unreached_text(sacct_error, squeue_error)
    for job_id in ids:
        if job_id not in states:
            if job_id in arrays:  # a sweep's array: its tasks (ID_N) carry the states
                continue
            if unreached:  # Slurm could not be asked: say what, and what it said last
                last = last_seen.recall(cluster, job_id)
                states[job_id] = JobState(job_id, unreached=unreached, last_known=last_seen.describe(last) if last
                                          else "", note=f"{unreached}; last known: {last_seen.describe(last)}")
            else:
                note = ("not in the queue, and sacct does not know it yet" if sacct_works
                        else "not in the queue any more, and there is no sacct (Slurm accounting) to say how it "
                             "ended")
                states[job_id] = JobState(job_id, note=note)
        elif squeue_error and job_id in ask and not states[job_id].finished:
            states[job_id].unreached = unreached  # sacct's word, which the controller could not confirm
            states[job_id].note = f"{unreached}; as accounting last recorded it"
        states[job_id].accounting = sacct_works
    return states


def unreached_text(sacct_error: str, squeue_error: str) -> str:
    """What could not be reached, from the errors of ``sacct`` and ``squeue`` (``""``: both
    answered, or the cluster simply keeps no accounting)."""
    parts = []
    if squeue_error:
        parts.append(f"the Slurm controller (slurmctld) could not be reached ({squeue_error})")
    if sacct_error and NO_ACCOUNTING not in sacct_error:
        parts.append(f"Slurm accounting (slurmdbd) could not be reached ({sacct_error})")
    return "; ".join(parts)


def path_exists(remote: Remote, path: str) -> bool:
    """True when ``path`` exists where the job runs."""
    if remote.local:
        return os.path.exists(path)
    rc, _, _ = remote.run(f"test -e {shlex.quote(path)}")
    return rc == 0


#: seconds a job may run before a log that does not exist is reported (Slurm creates it at start)
LOG_GRACE = 10.0


def follow_log(remote: Remote, job_id: str, path: str, write: Callable[[bytes], None], *,
               poll: float = 1.0, on_state: Callable[[JobState], None] | None = None,
               settle: int = 30, until: Callable[[], bool] | None = None,
               on_problem: Callable[[str], None] | None = None) -> JobState:
    """Copy the log at ``path`` to ``write`` as it grows until job ``job_id`` has ended;
    return its final state (``exit_code`` set when sacct says how it ended: it is
    asked up to ``settle`` times, a second apart, since accounting may lag).
    ``on_state`` sees each new queue state (PENDING with its reason, RUNNING...).
    ``until`` ends the following earlier, while the job still runs (a stage of a
    one-allocation pipeline that ended): the state returned is then the queue's.
    ``on_problem`` is told, once each, what cannot be reached while following: the
    controller (squeue is retried meanwhile), or the log (missing while the job runs)."""
    from nemo_runspec.slurm.queue import NEVER_STARTS, squeue_state

    offset = 0
    last: tuple[str, str] | None = None
    running_since: float | None = None
    said: set[str] = set()

    def problem(kind: str, text: str) -> None:
        if on_problem is not None and kind not in said:
            said.add(kind)
            on_problem(text)

    def pump() -> None:
        nonlocal offset
        data = remote.read_from(path, offset)
        if data:
            offset += len(data)
            write(data)

    while True:
        q = squeue_state(remote, job_id, on_retry=lambda text: (problem("controller", text), pump()))
        if q is None:
            break
        if on_state is not None and (q[0], q[1]) != last:
            on_state(JobState(job_id, state=q[0], reason=_clean(q[1]), nodes=_clean(q[2]), source="squeue"))
        last = (q[0], q[1])
        pump()
        if q[0] == "RUNNING":  # Slurm creates the log at start: missing a while later, it is gone
            now = time.monotonic()
            running_since = running_since or now
            if now - running_since > LOG_GRACE:
                running_since = now  # look again in LOG_GRACE seconds
                if not path_exists(remote, path):
                    problem("log", f"its log {path} does not exist although the job runs: deleted, or written "
                                   "where this machine cannot see it; following its state only")
        if q[0] in TERMINAL_STATES:
            break
        if q[0] == "PENDING" and q[1] in NEVER_STARTS:  # it would be followed forever
            return JobState(job_id, state=q[0], reason=q[1], source="squeue",
                            note=f"can never start: Slurm says {q[1]} ({NEVER_STARTS[q[1]]}); "
                                 f"cancel it with nemotron jobs cancel {job_id}")
        if until is not None and until():
            pump()
            return JobState(job_id, state=q[0], reason=_clean(q[1]), nodes=_clean(q[2]), source="squeue")
        time.sleep(poll)
    final = query_states(remote, [job_id])[job_id]
    tries = 1
    while final.accounting and not final.finished and tries < settle:
        pump()
        time.sleep(1)
        final = query_states(remote, [job_id])[job_id]
        tries += 1
    pump()
    if not path_exists(remote, path):
        problem("log", f"its log {path} does not exist (any more): deleted, or written where this machine "
                       "cannot see it")
    if final.unreached:
        problem("final", f"{final.unreached}; last known: {final.last_known or 'never seen'}")
    return final


def scancel(remote: Remote, ids: Sequence[str]) -> None:
    """``scancel`` the job ids in one command; :class:`ExecutionError` with scancel's
    message when it fails."""
    rc, out, err = remote.run("scancel " + " ".join(shlex.quote(i) for i in ids))
    if rc != 0:
        msg = " ".join((err or out).split()) or f"scancel exited {rc}"
        raise ExecutionError(f"could not cancel job(s) {', '.join(ids)}: {msg}")


def cancel_jobs(remote: Remote, subs: Sequence[Submission]) -> None:
    """``scancel`` the jobs (one command), then delete the secrets files that jobs which
    never started leave in their job dirs. Raises :class:`ExecutionError` with
    scancel's message when it fails."""
    if not subs:
        return
    scancel(remote, [s.job_id for s in subs])
    paths = [s.secrets_path for s in subs if s.job_dir]
    if paths:
        remote.run("rm -f " + " ".join(shlex.quote(p) for p in paths))
