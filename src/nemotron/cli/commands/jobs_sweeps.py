"""``nemotron jobs`` for sweeps: ``SWEEP`` (every point) and ``SWEEP:N`` (one point).

A sweep (docs/sweeps.md) is one entry of ``jobs list``, its points' states from one
``sacct`` per cluster (:func:`nemo_runspec.sweep.states.states_of`). ``status``
shows the points table (state, exit code, the last loss its log printed),
``logs SWEEP:N`` one point's log, ``cancel`` the whole sweep (every array,
one ``scancel`` per cluster) or one point (its array task). A sweep is named by
its id, by an array's Slurm id (``168``), or ``168:N``/``168_N`` for a point.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

import typer

from nemo_runspec.errors import CLIUsageError
from nemotron.cli.commands.jobs_common import out as _out
from nemotron.cli.commands.jobs_common import print_table

if TYPE_CHECKING:
    from nemo_runspec.slurm.jobs import JobState
    from nemo_runspec.slurm.ledger import Submission
    from nemo_runspec.sweep.record import SweepRecord


def resolve(ref: str) -> tuple[SweepRecord, int | None] | None:
    """The sweep (and point) ``ref`` names, or None."""
    from nemo_runspec.sweep.record import resolve as _resolve

    return _resolve(ref)


def summary(states: dict[int, JobState], total: int) -> str:
    """``4 points: 3 COMPLETED, 1 FAILED``."""
    counts = Counter(st.state for st in states.values())
    unknown = total - len(states)
    parts = [f"{n} {state}" for state, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    if unknown:
        parts.append(f"{unknown} not run")
    return f"{total} points: " + ", ".join(parts)


def sweeps_of() -> list[tuple[SweepRecord, Submission]]:
    """Every sweep record, each with a ledger entry standing for it (for ``--recipe``)."""
    from nemo_runspec.slurm.ledger import Submission
    from nemo_runspec.sweep.record import load_all

    return [(rec, Submission(job_id=rec.id, name=rec.id, job_dir="", recipe=rec.recipe)) for rec in load_all()]


def arrays_of(records: list[tuple[SweepRecord, Any]]) -> list[Submission]:
    """The ledger entries of the sweeps' arrays (asked about with the other jobs)."""
    from nemo_runspec.sweep.states import submission

    return [submission(a) for rec, _ in records for a in rec.arrays]


def list_rows(sweeps: list[tuple[SweepRecord, Any]], wanted: set[str],
              raw: dict[str, JobState] | None = None) -> list[tuple[str, Any, Any]]:
    """``(submitted, Submission, JobState)`` rows for ``jobs list``: one per sweep, its
    state the points' summary. ``raw`` is what the list's one query per cluster answered
    (the arrays' tasks among it); arrays it did not answer are asked about here."""
    from nemo_runspec.slurm.jobs import JobState
    from nemo_runspec.slurm.ledger import Submission
    from nemo_runspec.sweep.states import states_of, tasks_from

    records = [rec for rec, _ in sweeps]
    all_states = states_of(records, known=tasks_from(raw or {})) if records else {}
    rows = []
    for rec in records:
        states = all_states.get(rec.id, {})
        if wanted and not any(st.state in wanted for st in states.values()):
            continue
        arrays = ",".join(a.job_id for a in rec.arrays) or "local"
        sub = Submission(job_id=rec.id, name=rec.id, job_dir="", recipe=rec.recipe, profile=rec.profile,
                         env_file=rec.env_file, submitted_at=rec.created, sweep=rec.id, slurm_name=arrays)
        rows.append((rec.created, sub, JobState(rec.id, state=summary(states, len(rec.points)))))
    return rows


def _point_sub(rec: SweepRecord, index: int) -> Submission | None:
    """A point's array task as a ledger entry (job id ``<array>_<N>``, its logs)."""
    from nemo_runspec.sweep.states import submission

    array = rec.latest(index)
    if array is None:
        return None
    base = submission(array)
    return dataclasses.replace(base, job_id=f"{array.job_id}_{index}",
                               log_path=array.logs.get(str(index)), sbatch_log_path=array.sbatch_logs.get(str(index)))


#: how many of a log's last lines mentioning a loss are read for the final loss
_LOSS_LINES = 20


def losses(rec: SweepRecord, indices: list[int]) -> dict[int, str]:
    """The last loss each point's log printed (``-`` when none, or no log): one command per
    cluster for all the points (``grep`` there, so only the matching lines come back,
    whatever the logs' size), never a connection per point."""
    import secrets
    import shlex

    from nemo_runspec.slurm import jobs as sj
    from nemo_runspec.sweep.states import final_loss

    groups: dict[tuple[Any, ...], list[tuple[int, str, Submission | None]]] = {}
    for i in indices:
        sub = _point_sub(rec, i)
        path = sub.log_path if sub is not None else (rec.local.get(str(i)) or {}).get("log")
        if path:
            groups.setdefault(sj.tunnel_key(sub) if sub is not None else ("local",), []).append((i, path, sub))
    found = {i: "-" for i in indices}
    mark = f"@@nemotron-loss-{secrets.token_hex(4)}@@"
    for members in groups.values():
        cmd = "; ".join(f"echo {mark}{i}; grep -a -i loss {shlex.quote(path)} 2>/dev/null | tail -n {_LOSS_LINES}"
                        for i, path, _ in members)
        sub = next((m[2] for m in members if m[2] is not None), None)
        try:
            if sub is None or sub.tunnel != "ssh":
                import subprocess

                text = subprocess.run(cmd, shell=True, capture_output=True, text=True, errors="replace",
                                      stdin=subprocess.DEVNULL).stdout
            else:
                remote = sj.remote_for(sub)
                try:
                    text = remote.run(cmd)[1]
                finally:
                    sj.close(remote)
        except Exception:  # noqa: BLE001 - logs that cannot be read have no loss to show
            continue
        lines: dict[int, list[str]] = {}
        current: list[str] = []
        for line in text.splitlines():
            if line.startswith(mark) and line[len(mark):].isdigit():
                current = lines.setdefault(int(line[len(mark):]), [])
            else:
                current.append(line)
        for i, got in lines.items():
            found[i] = final_loss("\n".join(got)) or "-"
    return found


def point_attempts(rec: SweepRecord, indices: list[int]) -> dict[int, list[Any]]:
    """The attempts of the points that ran with ``[resilience]`` (their ``points/<N>/resilience``
    records), one command per cluster; points without records are left out."""
    from nemo_runspec.slurm import attempts as sa
    from nemo_runspec.slurm import jobs as sj
    from nemo_runspec.sweep.states import submission

    groups: dict[tuple[Any, ...], tuple[Submission, dict[str, int]]] = {}
    for i in indices:
        array = rec.latest(i)
        if array is None or not array.job_dir:
            continue
        sub = submission(array)
        groups.setdefault(sj.tunnel_key(sub), (sub, {}))[1][f"{array.job_dir}/points/{i}"] = i
    found: dict[int, list[Any]] = {}
    for sub, dirs in groups.values():
        try:
            remote = sj.remote_for(sub)
            try:
                for path, tries in sa.load(remote, list(dirs)).items():
                    found[dirs[path]] = tries
            finally:
                sj.close(remote)
        except Exception:  # noqa: BLE001 - records that cannot be read are not shown
            continue
    return found


def status(rec: SweepRecord, index: int | None, as_json: bool) -> None:
    """The points table of ``rec`` (or one point's details)."""
    from nemo_runspec.sweep.states import point_states

    states = point_states(rec, strict=True)
    shown = list(range(len(rec.points))) if index is None else [index]
    loss = losses(rec, shown)
    tries = point_attempts(rec, shown)
    rows = []
    for i in shown:
        st = states.get(i)
        array = rec.latest(i)
        rows.append({"point": i, "job_id": f"{array.job_id}_{i}" if array else None,
                     "state": st.state if st else "NOT RUN", "exit_code": st.exit_code if st else None,
                     "loss": loss[i], "overrides": rec.label(i),
                     "log": (array.logs.get(str(i)) if array else (rec.local.get(str(i)) or {}).get("log")),
                     "reason": (st.reason or st.note) if st else ""})
        if i in tries:
            rows[-1]["attempts"] = [dataclasses.asdict(a) for a in tries[i]]
    if as_json:
        _out(json.dumps({"sweep": rec.id, "recipe": rec.recipe, "profile": rec.profile, "created": rec.created,
                         "arrays": [{"job_id": a.job_id, "points": a.indices} for a in rec.arrays],
                         "points": rows}, indent=1))
        return
    _out(f"sweep {rec.id} ({rec.recipe or '-'}, profile {rec.profile or '-'}, "
         f"{summary(states, len(rec.points))}; arrays {', '.join(a.job_id for a in rec.arrays) or '-'})")
    from nemo_runspec.slurm.attempts import brief

    extra = ["ATTEMPTS"] if tries else []  # only with [resilience] records, as jobs list does
    print_table(["POINT", "JOB", "STATE", "EXIT", "LOSS", *extra, "OVERRIDES"],
                [[str(r["point"]), r["job_id"] or "-", r["state"], "-" if r["exit_code"] is None else str(r["exit_code"]),
                  r["loss"], *([brief(tries.get(r["point"], []))] if tries else []), r["overrides"]] for r in rows])
    if index is not None and rows[0]["log"]:
        _out(f"log: {rows[0]['log']}")


def logs(rec: SweepRecord, index: int | None, *, follow: bool, sbatch_log: bool) -> int:
    """Point ``index``'s log (every point's, one after another, without an index)."""

    if index is None:
        if follow:
            raise CLIUsageError(f"-f follows one point: nemotron jobs logs -f {rec.id}:N",
                                hint=f"points 0..{len(rec.points) - 1}")
        code = 0
        for i in range(len(rec.points)):
            _out(f"==> point {i} ({rec.label(i)}) <==")
            code = _one_log(rec, i, sbatch_log=sbatch_log, follow=False) or code
        return code
    return _one_log(rec, index, sbatch_log=sbatch_log, follow=follow)


def _one_log(rec: SweepRecord, index: int, *, sbatch_log: bool, follow: bool) -> int:
    from nemo_runspec.slurm import jobs as sj
    from nemotron.cli.commands.jobs_logs import follow_log, print_log

    sub = _point_sub(rec, index)
    if sub is None:
        local = rec.local.get(str(index))
        if local and local.get("log"):
            with open(local["log"], "rb") as f:
                sys.stdout.buffer.write(f.read())
            return 0
        typer.echo(f"point {index} of sweep {rec.id} has not run on Slurm; its output went to the terminal "
                   "that ran it", err=True)
        return 0
    path = (sub.sbatch_log_path if sbatch_log else sub.log_path) or sub.log_path
    remote = sj.remote_for(sub)
    try:
        return follow_log(remote, sub, path) if follow else print_log(remote, sub, path)
    finally:
        sj.close(remote)


def cancel(rec: SweepRecord, index: int | None, *, dry: bool) -> None:
    """``scancel`` the sweep's unfinished arrays (or point ``index``'s task), then delete
    the secrets files of the points that never started."""
    import shlex

    from nemo_runspec.execution.secret_file import SECRET_FILE_NAME
    from nemo_runspec.slurm import jobs as sj
    from nemo_runspec.sweep.states import point_states, submission

    states = point_states(rec, strict=True)
    wanted = range(len(rec.points)) if index is None else [index]
    live = [i for i in wanted if i in states and not states[i].finished and rec.latest(i) is not None]
    for i in wanted:
        if i in states and states[i].finished and index is not None:
            _out(f"point {i} already {states[i].state}; nothing to cancel")
    if not live:
        if index is None:
            _out(f"sweep {rec.id}: every point has ended; nothing to cancel")
        return
    by_array: dict[str, list[int]] = {}
    for i in live:
        by_array.setdefault(rec.latest(i).job_id, []).append(i)  # type: ignore[union-attr]
    groups: dict[tuple, list[tuple[Any, list[int]]]] = {}
    for array in rec.arrays:
        if array.job_id in by_array:
            sub = submission(array)
            groups.setdefault(sj.tunnel_key(sub), []).append((array, by_array[array.job_id]))
    for members in groups.values():
        ids = []
        for array, points in members:  # a whole array when all its unfinished points go
            whole = index is None
            ids += [array.job_id] if whole else [f"{array.job_id}_{i}" for i in points]
        if dry:
            _out(f"would cancel {' '.join(ids)} (points {', '.join(str(i) for _, p in members for i in p)})")
            continue
        remote = sj.remote_for(submission(members[0][0]))
        try:
            sj.scancel(remote, ids)
            paths = [f"{array.job_dir}/points/{i}/{SECRET_FILE_NAME}" for array, points in members for i in points]
            remote.run("rm -f " + " ".join(shlex.quote(p) for p in paths))
        finally:
            sj.close(remote)
        for array, points in members:
            _out(f"cancelled {'array ' + array.job_id if index is None else f'{array.job_id}_{index}'} "
                 f"(points {', '.join(map(str, points))} of sweep {rec.id})")
