"""The few lines ``nemotron report`` prints about a report (one per job, stage or point)."""

from __future__ import annotations

from nemo_runspec.report.fmt import span
from nemo_runspec.report.model import EVAL_LOSS, JOB, TRAIN_LOSS, JobReport, Report, tokens_per_sec


def job_line(job: JobReport) -> str:
    """``COMPLETED (exit 0), 2 attempts (preempted), step 40, loss 6.44 (eval 6.91), 2,510 tok/s, 1m00s``."""
    parts = [job.state + (f" (exit {job.exit_code})" if job.exit_code is not None else "")]
    if job.attempts:
        ends = [a.kind for a in job.attempts if a.requeued]
        parts.append(f"{len(job.attempts)} attempt{'s' if len(job.attempts) != 1 else ''}"
                     + (f" ({', '.join(ends)})" if ends else ""))
    if job.last_step is not None:
        parts.append(f"step {job.last_step}")
    loss, ev = job.final(TRAIN_LOSS), job.final(EVAL_LOSS)
    if loss is not None or ev is not None:
        text = f"loss {loss:.4f}" if loss is not None else "loss -"
        parts.append(text + (f" (eval {ev:.4f})" if ev is not None else ""))
    tps = tokens_per_sec(job)
    if tps is not None:
        parts.append(f"{tps:,.0f} tok/s")
    if job.seconds is not None:
        parts.append(span(job.seconds))
    if job.profiles:
        parts.append(f"{len(job.profiles)} nsys report(s)")
    return ", ".join(parts)


def summary_lines(report: Report) -> list[str]:
    """One line per member (job, stage or point), the best point marked, then the notes."""
    lines = []
    for i, m in enumerate(report.members):
        if m.job is None:
            lines.append(f"{m.label}: skipped ({m.skipped or 'no job'})")
            continue
        job = m.job
        head = f"job {job.id}" + (f" ({job.identity.recipe})" if job.identity.recipe else "")
        if report.kind != JOB:
            where = ", ".join(f"{k}={v}" for k, v in m.overrides.items())
            head = f"{m.label}{' [' + where + ']' if where else ''}: {head}"
        best = "  <- best" if report.best == i else ""
        lines.append(f"{head}: {job_line(job)}{best}")
        if job.outcome:
            lines.append(f"  {job.outcome}")
    return lines
