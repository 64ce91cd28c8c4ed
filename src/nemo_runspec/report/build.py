"""``build_report(refs)``: what the references name, collected into a :class:`Report`.

A reference is what ``nemotron jobs`` takes (a job id, a job or recipe name, an
experiment id, a pipe id: :func:`nemo_runspec.slurm.ledger.find`) or a job dir
on this machine (a local run's ``$NEMOTRON_HOME/jobs/<recipe>/<stamp>``, or a
Slurm job dir). One reference makes a job or a pipe report; several make a
sweep report, the jobs being its points (a sweep is a set of points, each a job
with the overrides that set it apart: :func:`sweep_report` takes them from
wherever they come from).

Slurm jobs are asked about once per cluster: one ``sacct`` for the states, one
``sacct -D`` for every attempt's times, then one command per job dir
(:mod:`nemo_runspec.report.jobfiles`). A cluster that cannot be reached, a job dir
that is gone: a note on that job, never an error for the whole report.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nemo_runspec.errors import CLIUsageError, NemoRunspecError
from nemo_runspec.report import collect, jobfiles
from nemo_runspec.report.model import (
    EVAL_LOSS,
    JOB,
    PIPE,
    SWEEP,
    TRAIN_LOSS,
    JobReport,
    Member,
    Report,
)

if TYPE_CHECKING:
    from nemo_runspec.slurm.ledger import Pipe, Submission

_LOG_ID = re.compile(r"^log-.*_(\d+)_\d+\.out$")


def _is_dir_ref(ref: str) -> bool:
    return ("/" in ref or ref.startswith(".")) and Path(ref).expanduser().is_dir()


def _dir_job(path: Path) -> JobReport:
    """A job dir on this machine: a local run's, or a Slurm job's read directly."""
    files = jobfiles.read_here(str(path))
    ids = {m.group(1) for f in files.tails if (m := _LOG_ID.match(f))}
    if not ids:
        return collect.local_job(path, files)
    job = JobReport(id=sorted(ids)[-1], name=path.name, where="slurm", job_dir=str(path))
    collect.assemble(job, files, packaging=path / "packaging.json")
    if job.attempts and job.attempts[-1].kind:  # how its last attempt ended, as it recorded it
        job.state = job.attempts[-1].kind.upper()
    job.notes.append("read from the job dir alone: no Slurm times or state (give the job id for those)")
    return job


def collect_slurm(subs: Sequence[Submission]) -> dict[tuple[str, str], JobReport]:
    """``(job id, job dir) -> report`` for Slurm jobs, each cluster asked once."""
    from nemo_runspec.slurm import jobs as sj

    out: dict[tuple[str, str], JobReport] = {}
    for members in sj.by_connection(subs):
        try:
            remote = sj.remote_for(members[0])
        except NemoRunspecError as exc:
            for sub in members:
                job = JobReport(id=sub.job_id, name=sub.name, job_dir=sub.job_dir, state=sj.UNREACHABLE)
                job.notes.append(f"cluster not reached: {exc}")
                out[(sub.job_id, sub.job_dir)] = job
            continue
        try:
            ids = [s.job_id for s in members]
            states = sj.query_states(remote, ids)
            rows = collect.slurm_rows(remote, ids)
            for sub in members:
                files = jobfiles.read_with(remote.run, sub.job_dir)
                out[(sub.job_id, sub.job_dir)] = collect.slurm_job(sub, files, states.get(sub.job_id),
                                                                   rows.get(sub.job_id, []))
        finally:
            sj.close(remote)
    return out


def _resolve(ref: str) -> Submission | Pipe | Path:
    if _is_dir_ref(ref):
        return Path(ref).expanduser().absolute()
    from nemo_runspec.slurm.ledger import find

    return find(ref)


def job_report(ref: str) -> Report:
    """The report of one job or pipe reference (see the module docstring)."""
    from nemo_runspec.slurm.ledger import Pipe

    # SWEEPS (issue 32): once a sweep has a record of its own, its id resolves here to its
    # points (each a job and its overrides) and the report is sweep_report(title, jobs, overrides).
    found = _resolve(ref)
    now = time.time()
    if isinstance(found, Path):
        job = _dir_job(found)
        return Report(JOB, job.id, f"{job.identity.recipe or job.name} job {job.id}", now, [Member(job.id, job)])
    if isinstance(found, Pipe):
        return pipe_report(found)
    job = collect_slurm([found])[(found.job_id, found.job_dir)]
    return Report(JOB, job.id, f"{job.identity.recipe or job.name} job {job.id}", now, [Member(job.id, job)])


def pipe_report(pipe: Pipe) -> Report:
    """One member per stage, in stage order, with the stages it waits for."""
    from nemo_runspec.slurm.ledger import load_submissions

    recorded = load_submissions()
    subs = {st.name: pipe.stage_submission(st, recorded) for st in pipe.stages}
    jobs = collect_slurm([s for s in subs.values() if s is not None])
    members = []
    for st in pipe.stages:
        sub = subs[st.name]
        job = jobs.get((sub.job_id, sub.job_dir)) if sub is not None else None
        members.append(Member(st.name, job, depends_on=list(st.depends_on),
                              skipped="its output exists (resumed pipe)" if st.skipped else ""))
    return Report(PIPE, pipe.id, f"pipe {pipe.id}", time.time(), members)


def set_report(refs: Sequence[str]) -> Report:
    """Several references as the points of a sweep (each a job)."""
    resolved = [(_resolve(r), r) for r in refs]
    subs = []
    for found, ref in resolved:
        if not isinstance(found, Path) and not hasattr(found, "job_dir"):
            raise CLIUsageError(f"{ref!r} is a pipe; a sweep report takes jobs",
                                hint=f"report it on its own: nemotron report {ref}")
        if not isinstance(found, Path):
            subs.append(found)
    slurm = collect_slurm(subs)
    jobs = [_dir_job(found) if isinstance(found, Path) else slurm[(found.job_id, found.job_dir)]
            for found, _ in resolved]
    return sweep_report(f"{len(jobs)} jobs", jobs, [dict(_overrides(j)) for j in jobs], id_=",".join(refs))


def _overrides(job: JobReport) -> list[tuple[str, str]]:
    return [tuple(o.split("=", 1)) if "=" in o else (o, "") for o in job.identity.overrides]  # type: ignore[misc]


def sweep_report(title: str, jobs: Sequence[JobReport], overrides: Sequence[dict[str, str]], *,
                 id_: str = "") -> Report:
    """A sweep of points: ``jobs[i]`` ran with ``overrides[i]``. Only the overrides that
    differ between points are kept on the members; the best point is the one with the
    lowest final eval loss (train loss when not every point has an eval loss)."""
    keys = sorted({k for o in overrides for k in o})
    varying = [k for k in keys if len({o.get(k) for o in overrides}) > 1]
    members = [Member(f"point {i}", job, overrides={k: o.get(k, "") for k in varying})
               for i, (job, o) in enumerate(zip(jobs, overrides, strict=True))]
    report = Report(SWEEP, id_ or title, title, time.time(), members)
    for metric in (EVAL_LOSS, TRAIN_LOSS):
        finals = [(m.job.final(metric), i) for i, m in enumerate(members) if m.job is not None]
        if finals and all(v is not None for v, _ in finals):
            report.best = min((v, i) for v, i in finals)[1]  # type: ignore[type-var]
            report.best_metric = metric
            break
    return report


def build_report(refs: Sequence[str]) -> Report:
    """One reference: a job or pipe report; several: a sweep report of those jobs."""
    refs = [r for r in refs if r.strip()]
    if not refs:
        raise CLIUsageError("nothing to report on", hint="give a job id, a pipe id or a job dir")
    return job_report(refs[0]) if len(refs) == 1 else set_report(refs)
