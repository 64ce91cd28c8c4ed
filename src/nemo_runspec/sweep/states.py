"""The state of every point of a sweep: one ``sacct`` per cluster for all its arrays.

``sacct -X -j <array ids>`` answers one line per array task that started
(``168_3``) and one per range still pending (``168_[4-7%2]``); both are read
here, so a refresh of ``nemotron jobs list``/``status`` asks Slurm once however
many points there are. Without accounting, one ``squeue -r`` (one line per task)
stands in. A point that ran here has the exit code its local run recorded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from nemo_runspec.slurm.jobs import UNKNOWN, JobState, _clean
from nemo_runspec.slurm.queue import TERMINAL_STATES, exit_code_from_sacct

if TYPE_CHECKING:
    from nemo_runspec.slurm.ledger import Submission
    from nemo_runspec.slurm.remote import Remote
    from nemo_runspec.sweep.record import ArrayRecord, SweepRecord

_TASK = re.compile(r"^(\d+)_(\d+)$")
#: the task index under which :func:`query_tasks` notes that sacct answered for an array
SEEN = -1
#: a task cancelled before it started leaves no record: sacct knows its array, not it
CANCELLED_UNSTARTED = "cancelled before it started (Slurm keeps no record of such an array task)"
_PENDING = re.compile(r"^(\d+)_\[([0-9,\-]+)(?:%\d+)?\]$")


def _expand(ranges: str) -> list[int]:
    out: list[int] = []
    for part in ranges.split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit():
            out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def query_tasks(remote: Remote, array_ids: Iterable[str]) -> dict[tuple[str, int], JobState]:
    """``{(array id, task index): state}`` of the arrays, in one ``sacct``; one ``squeue -r``
    for the arrays sacct does not know yet (just submitted) or without accounting."""
    ids = sorted(set(array_ids), key=lambda i: (len(i), i))
    if not ids:
        return {}
    rc, out, _ = remote.run(f"sacct -n -P -X -j {','.join(ids)} "
                            "-o JobID,State,ExitCode,Reason,NodeList,Start,End")
    rc_sacct = rc
    found: dict[tuple[str, int], JobState] = {}
    if rc == 0:
        for line in out.splitlines():
            parts = line.split("|")
            if len(parts) < 7:
                continue
            state = (parts[1].split() or [UNKNOWN])[0]
            for array_id, _ in _tasks(parts[0])[:1]:  # sacct knows this array (see CANCELLED_UNSTARTED)
                found.setdefault((array_id, SEEN), JobState(array_id, source="sacct"))
            for array_id, index in _tasks(parts[0]):
                if array_id not in ids:
                    continue
                st = JobState(f"{array_id}_{index}", state=state, raw_exit=parts[2], reason=_clean(parts[3]),
                              nodes=_clean(parts[4]), start=_clean(parts[5]), end=_clean(parts[6]), source="sacct")
                if st.finished:
                    st.exit_code = exit_code_from_sacct(state, parts[2])
                found[(array_id, index)] = st
        ids = [i for i in ids if (i, SEEN) not in found]  # too new for accounting: the queue knows
        if not ids:
            return found
    found.update(_squeue_tasks(remote, ids, accounting=rc_sacct == 0))
    return found


def query_controller(remote: Remote, array_ids: Iterable[str]) -> dict[tuple[str, int], JobState]:
    """The tasks of the arrays as the controller holds them, finished ones included
    (``squeue --states=all``): asked only for tasks sacct did not list. Accounting can lag
    behind the controller (seen on the cluster: a task that had just completed was not in
    sacct's answer yet, and was taken for one cancelled before it started); a task neither
    knows was cancelled before it started, or ended too long ago for the controller to hold."""
    return _squeue_tasks(remote, sorted(set(array_ids), key=lambda i: (len(i), i)), all_states=True)


def _squeue_tasks(remote: Remote, ids: list[str], *, all_states: bool = False,
                  accounting: bool = True) -> dict[tuple[str, int], JobState]:
    """``{(array id, task index): state}`` from one ``squeue -r`` (``--states=all``: finished
    tasks the controller still holds too)."""
    states = " --states=all" if all_states else ""
    rc, out, _ = remote.run(f"squeue -h -r{states} -j {','.join(ids)} -o '%i|%T|%r|%N'")
    found: dict[tuple[str, int], JobState] = {}
    for line in out.splitlines() if rc == 0 else []:
        parts = line.strip().split("|")
        if len(parts) < 4:
            continue
        for array_id, index in _tasks(parts[0]):
            if array_id in ids:
                found[(array_id, index)] = JobState(f"{array_id}_{index}", state=parts[1].strip(),
                                                    reason=_clean(parts[2]), nodes=_clean(parts[3]),
                                                    source="squeue", accounting=accounting)
    return found


def _tasks(job_id: str) -> list[tuple[str, int]]:
    if m := _TASK.match(job_id):
        return [(m.group(1), int(m.group(2)))]
    if m := _PENDING.match(job_id):
        return [(m.group(1), i) for i in _expand(m.group(2))]
    return []


def point_states(rec: SweepRecord, *, strict: bool = False) -> dict[int, JobState]:
    """The state of each point of ``rec``: its newest array task's, or its local run's.
    A cluster that cannot be reached is an error with ``strict``, else its points are
    ``UNREACHABLE`` (the error in their note)."""
    return states_of([rec], strict=strict)[rec.id]


def tasks_from(raw: dict[str, JobState]) -> dict[tuple[str, int], JobState]:
    """The array tasks among the states :func:`nemo_runspec.slurm.jobs.query_states` answered
    (``168_3``, ``168_[4-7]``), as :func:`query_tasks` returns them."""
    found: dict[tuple[str, int], JobState] = {}
    for key, st in raw.items():
        pairs = _tasks(key)
        for array_id, _ in pairs[:1]:
            found.setdefault((array_id, SEEN), JobState(array_id, source=st.source))
        for array_id, index in pairs:
            found[(array_id, index)] = JobState(**{**vars(st), "job_id": f"{array_id}_{index}"})
    return found


def states_of(records: list[SweepRecord], *, strict: bool = False,
              known: dict[tuple[str, int], JobState] | None = None) -> dict[str, dict[int, JobState]]:
    """:func:`point_states` of several sweeps, with one query per cluster for all of them
    (none for the arrays ``known`` already answers: :func:`tasks_from`)."""
    from nemo_runspec.errors import NemoRunspecError
    from nemo_runspec.slurm import jobs as sj

    tasks: dict[tuple[str, int], JobState] = dict(known or {})
    groups: dict[tuple, list[Submission]] = {}
    for rec in records:
        for array in rec.arrays:
            if (array.job_id, SEEN) in tasks:
                continue
            sub = submission(array)
            groups.setdefault(sj.tunnel_key(sub), []).append(sub)
    for members in groups.values():
        try:
            remote = sj.remote_for(members[0])
            try:
                tasks.update(query_tasks(remote, [s.job_id for s in members]))
                ids = {s.job_id for s in members}
                missing = sorted({array.job_id for rec in records for array in rec.arrays if array.job_id in ids
                                  for i in array.indices if (array.job_id, i) not in tasks})
                if missing:
                    for key, st in query_controller(remote, missing).items():
                        tasks.setdefault(key, st)
            finally:
                sj.close(remote)
        except NemoRunspecError as exc:
            if strict:
                raise
            ids = {s.job_id for s in members}
            for rec in records:
                for array in rec.arrays:
                    if array.job_id in ids:
                        tasks.update({(array.job_id, i): JobState(f"{array.job_id}_{i}", state=sj.UNREACHABLE,
                                                                  note=str(exc)) for i in array.indices})
    return {rec.id: _point_states(rec, tasks) for rec in records}


def _point_states(rec: SweepRecord, tasks: dict[tuple[str, int], JobState]) -> dict[int, JobState]:
    states: dict[int, JobState] = {}
    for index in range(len(rec.points)):
        array = rec.latest(index)
        local = rec.local.get(str(index))
        if local is not None and (array is None or str(local.get("at") or "") >= array.submitted_at):
            code = local.get("exit_code")
            states[index] = JobState(f"local:{index}", state="COMPLETED" if code == 0 else "FAILED",
                                     exit_code=code, source="local", raw_exit=str(code))
            continue
        if array is None:
            continue
        st = tasks.get((array.job_id, index))
        if st is None and tasks.get((array.job_id, SEEN), JobState("")).source == "sacct":
            st = JobState(f"{array.job_id}_{index}", state="CANCELLED", note=CANCELLED_UNSTARTED, source="sacct")
        states[index] = st if st is not None else JobState(
            f"{array.job_id}_{index}", note="Slurm does not know this task (yet)")
    return states


def completed(rec: SweepRecord | None, states: dict[int, JobState] | None = None) -> set[int]:
    """The points of ``rec`` that completed (what a rerun skips). A cluster that cannot be
    asked is an error, never "nothing completed" (which would run every point again)."""
    if rec is None:
        return set()
    states = point_states(rec, strict=True) if states is None else states
    return {i for i, st in states.items() if st.state == "COMPLETED"}


def submission(array: ArrayRecord) -> Submission:
    """The ledger entry of an array (from its record)."""
    from nemo_runspec.slurm.ledger import Submission

    return Submission.from_json(array.submission)


_LOSS = re.compile(r"\b(?:val_|train_|lm_)?loss\b\s*[=:]?\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)", re.I)


def final_loss(text: str) -> str | None:
    """The last ``loss`` a log prints (``loss 2.31``, ``loss=2.31``, ``lm loss: 2.3E+00``), or None."""
    last = None
    for m in _LOSS.finditer(text):
        last = m.group(1)
    return last


def not_to_rerun(rec: SweepRecord | None) -> tuple[set[int], set[int]]:
    """``(completed, still queued or running)`` points of ``rec``: a rerun submits neither
    (the second would run twice). Unreachable cluster: an error (see :func:`completed`)."""
    if rec is None:
        return set(), set()
    states = point_states(rec, strict=True)
    live = {i for i, st in states.items() if not st.finished and st.state not in (UNKNOWN, "UNREACHABLE")}
    return completed(rec, states), live


__all__ = ["TERMINAL_STATES", "completed", "final_loss", "not_to_rerun", "point_states", "query_tasks",
           "states_of"]
