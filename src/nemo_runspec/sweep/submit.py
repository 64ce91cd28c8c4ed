"""A sweep on Slurm: one ``sbatch --array`` per allocation shape, recorded for ``nemotron jobs``.

See :mod:`nemo_runspec.sweep.driver` for the steps. All or nothing: when a
later array of the sweep cannot be submitted (or the command is interrupted),
the arrays already queued are cancelled again.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nemo_runspec.config.sweep import Point, SweepPlan
from nemo_runspec.errors import ConfigError, ExecutionError
from nemo_runspec.sweep.points import PointJob, derive, shape_of

if TYPE_CHECKING:
    from nemo_runspec.cmdline.recipe_config import RecipeConfig
    from nemo_runspec.slurm.prepared import PreparedJob, SubmittedJob
    from nemo_runspec.spec.models import Runspec
    from nemo_runspec.sweep.array import ArrayJob
    from nemo_runspec.sweep.collect import Taken
    from nemo_runspec.sweep.invoke import Points

#: Slurm's MaxArraySize when ``scontrol show config`` does not say (its documented default)
SLURM_DEFAULT_MAX_ARRAY_SIZE = 1001


def shapes(points: Points, first: Taken, plan: SweepPlan, sweep_id: str) -> list[tuple[PreparedJob, list[PointJob]]]:
    """``(representative, point jobs)`` per allocation shape, in point order."""
    groups: dict[tuple, list[Point]] = {}
    for p in plan.points:
        groups.setdefault(shape_of(p), []).append(p)
    queue = list(groups.values())
    out: list[tuple[PreparedJob, list[PointJob]]] = []
    while queue:
        members = queue.pop(0)
        taken = first if members[0] is plan.points[0] else points.take(members[0])
        if taken.prepared is None:
            raise ConfigError(f"point {members[0].index} ({members[0].label()}) does not run on Slurm, "
                              "but point 0 does", hint="sweep one executor at a time")
        # each point's train.yaml; the job.yaml of the array is its representative's (sweep.array)
        done, apart = derive(taken.job, members, sweep_id, names=("train.yaml",))
        out.append((taken.prepared, done))
        if apart:
            queue.insert(0, apart)
    return out


def max_array_size(rep: PreparedJob, *, offline: bool) -> tuple[int | None, str]:
    """``(limit, where it came from)``: the profile's ``max_array_size``, else (when not
    ``offline``) the cluster's ``MaxArraySize``; ``(None, "")`` when neither says."""
    if rep.values.get("max_array_size"):
        return int(rep.values["max_array_size"]), "the profile's max_array_size"
    if offline:
        return None, ""
    from nemo_runspec.slurm.remote import Remote

    try:
        rc, out, _ = Remote(rep).run("scontrol show config")
    except Exception:  # noqa: BLE001 - an unreachable cluster is reported by the submission itself
        return None, ""
    m = re.search(r"^MaxArraySize\s*=\s*(\d+)", out, re.M) if rc == 0 else None
    if m:
        return int(m.group(1)), "the cluster's MaxArraySize"
    return (SLURM_DEFAULT_MAX_ARRAY_SIZE, "Slurm's default MaxArraySize") if rc == 0 else (None, "")


def check_array_size(arrays: list[ArrayJob], *, offline: bool) -> None:
    """More points than Slurm takes in one array is one line, before anything is submitted."""
    for job in arrays:
        limit, where = max_array_size(job, offline=offline)
        if limit is not None and max(job.indices) >= limit:
            raise ConfigError(
                f"the sweep has {max(job.indices) + 1} points, more than one Slurm array takes "
                f"({where} is {limit}: point numbers 0..{limit - 1})", key="max_array_size",
                hint="sweep fewer values, or split the sweep into several commands")


def sweep_on_slurm(points: Points, first: Taken, plan: SweepPlan, sweep_id: str, spec: Runspec,
                   cfg: RecipeConfig, *, parallel: int | None) -> int:
    """Show or submit the sweep's arrays; returns the exit code."""
    from nemo_runspec.sweep import array as array_mod
    from nemo_runspec.sweep import states
    from nemo_runspec.sweep.invoke import points_table
    from nemo_runspec.sweep.record import load

    groups = shapes(points, first, plan, sweep_id)
    dry = bool(first.job.dry_run)
    done: set[int] = set()
    live: set[int] = set()
    if not dry and not cfg.ctx.no_resume:
        done, live = states.not_to_rerun(load(sweep_id))
    arrays = []
    for rep, jobs in groups:
        todo = [j for j in jobs if j.point.index not in done | live]
        if todo:
            k = parallel or rep.values.get("max_parallel")
            arrays.append(array_mod.build(rep, todo, sweep_id=sweep_id, parallel=k))
    if done or live:
        left = sorted(i for a in arrays for i in a.indices)
        waiting = f", {len(live)} still queued or running ({', '.join(map(str, sorted(live)))})" if live else ""
        print(f"[sweep {sweep_id}] {len(done)} of {len(plan.points)} points completed before{waiting}; submitting "
              f"{len(left)} ({', '.join(map(str, left)) or 'none'}; --no-resume submits all)", file=sys.stderr)
    if not arrays:
        return 0
    check_array_size(arrays, offline=dry)
    if dry:
        return _show(arrays, plan, sweep_id, points_table)
    subs = _submit_all(arrays, sweep_id, spec, cfg, plan)
    _announce(subs, plan, sweep_id)
    if first.job.attached:
        from nemo_runspec.sweep.follow import follow_sweep

        return follow_sweep(sweep_id)
    return 0


def _show(arrays: list[ArrayJob], plan: SweepPlan, sweep_id: str, table: Callable[..., str]) -> int:
    from nemo_runspec.slurm import render_sbatch

    for n, job in enumerate(arrays):
        head = f"sweep {sweep_id}: array {n + 1} of {len(arrays)}, --array={job.array} " \
               f"({len(job.indices)} points, one task each)"
        print(head)
        print("sbatch script (exact script that would be submitted; array task N runs point N)")
        print(render_sbatch(job), end="")
        print(table(plan, set(job.indices)))
        print()
    print("dry run: nothing was submitted (a real run skips the points a previous run of this sweep "
          "completed; that needs the cluster, so it is not checked here)")
    return 0


def _submit_all(arrays: list[ArrayJob], sweep_id: str, spec: Runspec, cfg: RecipeConfig,
                plan: SweepPlan) -> list[tuple[ArrayJob, SubmittedJob]]:
    from nemo_runspec.slurm.submission import submit_detached

    subs: list[tuple[ArrayJob, SubmittedJob]] = []
    try:
        for job in arrays:
            sub = submit_detached(job, announce=False)
            subs.append((job, sub))
            _record(job, sub, sweep_id, spec, cfg, plan)
    except BaseException as exc:
        accepted = [s.job_id for _, s in subs] + ([exc.accepted_job_id] if getattr(exc, "accepted_job_id", None)
                                                  else [])
        if accepted:
            _cancel(arrays[0], accepted, sweep_id)
        raise
    return subs


def _cancel(job: ArrayJob, ids: list[str], sweep_id: str) -> None:
    from nemo_runspec.slurm.jobs import scancel
    from nemo_runspec.slurm.remote import Remote

    try:
        scancel(Remote(job), ids)
        print(f"[sweep {sweep_id}] cancelled {', '.join(ids)}: the sweep's submission did not finish",
              file=sys.stderr)
    except ExecutionError as exc:
        print(f"[sweep {sweep_id}] {exc}; cancel them with: scancel {' '.join(ids)}", file=sys.stderr)


def _record(job: ArrayJob, sub: SubmittedJob, sweep_id: str, spec: Runspec, cfg: RecipeConfig, plan: SweepPlan) -> None:
    """The array in the submission ledger and in the sweep's record."""
    from nemo_runspec.slurm.ledger import append_entry, submission_of
    from nemo_runspec.sweep import record as rec_mod
    from nemo_runspec.sweep.invoke import point_json

    first = min(job.indices)
    sub = dataclasses.replace(sub, log_path=job.log_path(first, sub.job_id),
                              sbatch_log_path=job.sbatch_log_path(first, sub.job_id))
    entry = dataclasses.replace(submission_of(sub), sweep=sweep_id)
    try:
        append_entry(entry)
    except Exception as exc:  # noqa: BLE001 - queued already; only its index is missing
        print(f"warning: array {sub.job_id} was submitted but not recorded for `nemotron jobs`: {exc}",
              file=sys.stderr)
    if job.plan is not None:
        job.plan.write_json(job.local_exp_dir / job.name / "packaging.json")
    fresh = rec_mod.SweepRecord(id=sweep_id, created=rec_mod.now(), recipe=spec.name, profile=cfg.profile,
                                env_file=str(job.env_file) if job.env_file else None,
                                points=[point_json(p) for p in plan.points])
    with rec_mod.updating(sweep_id, fresh) as rec:
        rec.arrays.append(rec_mod.ArrayRecord(
            job_id=sub.job_id, indices=list(job.indices), job_dir=job.job_dir, submitted_at=rec_mod.now(),
            submission=entry.to_json(),
            logs={str(i): job.log_path(i, sub.job_id) for i in job.indices},
            sbatch_logs={str(i): job.sbatch_log_path(i, sub.job_id) for i in job.indices}))


def _announce(subs: list[tuple[ArrayJob, Any]], plan: SweepPlan, sweep_id: str) -> None:
    from nemo_runspec.sweep.invoke import emit

    for job, sub in subs:
        print(f"Submitted sweep {sweep_id}: Slurm array job {sub.job_id} (--array={job.array}, "
              f"{len(job.indices)} points)", file=sys.stderr)
        print(f"  job dir: {job.job_dir} (points/<N>/: each point's configs and logs)", file=sys.stderr)
    for label, cmd in (("status", f"nemotron jobs status {sweep_id}"),
                       ("logs", f"nemotron jobs logs {sweep_id}:N"),
                       ("cancel", f"nemotron jobs cancel {sweep_id}")):
        print(f"  {label + ':':8} {cmd}", file=sys.stderr)
    emit({"sweep_id": sweep_id, "status": f"nemotron jobs status {sweep_id}",
          "cancel": f"nemotron jobs cancel {sweep_id}",
          "arrays": [{"job_id": s.job_id, "array": j.array, "job_dir": j.job_dir} for j, s in subs],
          "points": [{"index": i, "job_id": f"{s.job_id}_{i}", "log": j.log_path(i, s.job_id),
                      "values": dict(plan.points[i].values)} for j, s in subs for i in j.indices]})
    time.sleep(0)
