"""What every ``nemotron jobs`` command shares: one-line errors, plain tables, local
times, and the state of recorded jobs from one query per cluster."""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer

from nemo_runspec.errors import ExecutionError, NemoRunspecError
from nemotron.cli.commands.nano3.data.import_._common import global_context

if TYPE_CHECKING:
    from nemo_runspec.slurm.jobs import JobState
    from nemo_runspec.slurm.ledger import Pipe, Submission


def debug() -> bool:
    """Whether ``--debug`` or ``NEMOTRON_DEBUG`` asks for tracebacks."""
    if os.environ.get("NEMOTRON_DEBUG", "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    root = global_context()
    return bool(root is not None and root.debug)


def one_line_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """Our errors as one ``error:`` line: exit 1 for execution errors, else 2 (also
    when this sub-app runs on its own, outside ``nemotron``)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except NemoRunspecError as exc:
            if debug():
                raise
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1 if isinstance(exc, ExecutionError) else 2) from None

    return wrapper


def out(text: str = "") -> None:
    """One line on stdout (plain: no wrapping, no markup)."""
    sys.stdout.write(text + "\n")


def when(stamp: str) -> str:
    """``2025-06-01T10:00:00Z`` as local time, ``2025-06-01 12:00:00``."""
    import calendar

    try:
        secs = calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
    except (ValueError, TypeError):
        return stamp or "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(secs))


def print_table(header: list[str], rows: list[list[str]]) -> None:
    """Columns padded to their widest cell; never wrapped (ids and paths stay whole)."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
    for row in [header, *rows]:
        out("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def warn_bad_lines(bad: int) -> None:
    """Warn that ``bad`` lines of the submission ledger could not be read."""
    if bad:
        from nemo_runspec.slurm.ledger import ledger_path

        typer.echo(f"warning: skipped {bad} unreadable line(s) of {ledger_path()}", err=True)


def job_states(subs: list[Submission], *, live: bool = False, strict: bool = False,
            attempts: dict[str, list[Any]] | None = None,
            raw: dict[str, JobState] | None = None) -> dict[tuple[str, str], JobState]:
    """State of each job, one query per cluster. A cluster that cannot be reached is an
    error with ``strict``, else its jobs are UNREACHABLE (with a warning). ``attempts``,
    when given, is filled with the recorded attempts of resilient jobs (job dir -> list)."""
    from nemo_runspec.slurm import jobs as sj

    result: dict[tuple[str, str], JobState] = {}
    for members in sj.by_connection(subs):
        try:
            remote = sj.remote_for(members[0])
            try:
                got = sj.query_states(remote, [s.job_id for s in members], live=live)
                if raw is not None:  # every answer, a sweep's array tasks too (jobs_sweeps)
                    raw.update(got)
                if attempts is not None:
                    from nemo_runspec.slurm import attempts as sa

                    attempts.update(sa.load(remote, [s.job_dir for s in members]))
            finally:
                sj.close(remote)
        except NemoRunspecError as exc:
            if strict:
                raise
            typer.echo(f"warning: {exc}", err=True)
            got = {s.job_id: sj.JobState(s.job_id, state=sj.UNREACHABLE, note=str(exc)) for s in members}
        # the controller or accounting did not answer: say so once per cluster, not per job
        for text in dict.fromkeys(st.unreached for st in got.values() if st.unreached):
            typer.echo(f"warning: {text}; the states shown are what Slurm said last", err=True)
        for sub in members:
            if sub.job_id in got:
                result[(sub.job_id, sub.job_dir)] = got[sub.job_id]
    return result


def state_text(st: JobState) -> str:
    """A state as a table shows it: ``FAILED (1)``, ``UNKNOWN?``."""
    from nemo_runspec.slurm.jobs import UNKNOWN

    if st.finished and st.exit_code:
        return f"{st.state} ({st.exit_code})"
    if st.state == UNKNOWN:
        return f"UNKNOWN (last {st.last_known.split()[0]})" if st.last_known else "UNKNOWN?"
    return st.state + ("?" if st.unreached else "")


def row_json(sub: Submission | None, st: JobState, stage: str, pipe: Pipe | None,
              tries: dict[str, list[Any]] | None = None) -> dict[str, Any]:
    """A job (or a pipe's skipped stage) as ``--json`` prints it."""
    from dataclasses import asdict

    data: dict[str, Any] = sub.to_json() if sub is not None else {"job_id": None}
    data.pop("v", None)
    data.update(state=st.state, exit_code=st.exit_code, reason=st.reason, nodes=st.nodes,
                pipe=pipe.id if pipe is not None else data.get("pipe"), stage=stage or None)
    if sub is not None and tries and tries.get(sub.job_dir):
        data["attempts"] = [asdict(a) for a in tries[sub.job_dir]]
    return data
