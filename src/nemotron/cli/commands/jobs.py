"""``nemotron jobs``: the Slurm jobs (and pipes) submitted from here, found again by id or name.

Every job that ``--run``/``--batch`` (or a pipeline) submitted is in the
submission ledger (``$NEMOTRON_HOME/jobs/submissions.jsonl``,
:mod:`nemo_runspec.slurm.ledger`), with how its cluster was reached. These
commands ask that cluster about it again (``sacct``, else ``squeue``), here or
over the job's SSH tunnel, so nobody needs to remember a job dir.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from nemo_runspec.cli.recipe_typer import FastHelpGroup
from nemo_runspec.errors import CLIUsageError, ExecutionError, NemoRunspecError
from nemotron.cli.commands import jobs_sweeps
from nemotron.cli.commands.jobs_logs import (
    follow_log,
    job_ending,
    pipe_logs,
    print_log,
    status_details,
)
from nemotron.cli.commands.nano3.data.import_._common import (
    PlainParamsCommand,
    dry_run_requested,
    global_context,
)

if TYPE_CHECKING:
    from nemo_runspec.slurm.jobs import JobState
    from nemo_runspec.slurm.ledger import Pipe, Submission

app = typer.Typer(
    name="jobs",
    help="List, inspect, follow and cancel the Slurm jobs and pipes submitted from here "
    "(recorded in $NEMOTRON_HOME/jobs/submissions.jsonl).",
    cls=FastHelpGroup,
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

DEFAULT_LIMIT = 20


def _debug() -> bool:
    if os.environ.get("NEMOTRON_DEBUG", "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    root = global_context()
    return bool(root is not None and root.debug)


def _one_line_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """Our errors as one ``error:`` line: exit 1 for execution errors, else 2 (also
    when this sub-app runs on its own, outside ``nemotron``)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except NemoRunspecError as exc:
            if _debug():
                raise
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1 if isinstance(exc, ExecutionError) else 2) from None

    return wrapper


def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def _when(stamp: str) -> str:
    """``2025-06-01T10:00:00Z`` as local time, ``2025-06-01 12:00:00``."""
    import calendar

    try:
        secs = calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
    except (ValueError, TypeError):
        return stamp or "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(secs))


def _table(header: list[str], rows: list[list[str]]) -> None:
    """Columns padded to their widest cell; never wrapped (ids and paths stay whole)."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
    for row in [header, *rows]:
        _out("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


# --------------------------------------------------------------------------- state lookups


def _warn_bad_lines(bad: int) -> None:
    if bad:
        from nemo_runspec.slurm.ledger import ledger_path

        typer.echo(f"warning: skipped {bad} unreadable line(s) of {ledger_path()}", err=True)


def _states(subs: list[Submission], *, live: bool = False, strict: bool = False,
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


def _all_entries(subs: list[Submission], pipes: list[Pipe]) -> list[Submission]:
    """The ledger's jobs plus pipe stages it lacks, newest first."""
    known = list(subs)
    seen = {(s.job_id, s.job_dir) for s in subs}
    for pipe in pipes:
        for stage in pipe.stages:
            sub = pipe.stage_submission(stage, subs)
            if sub is not None and (sub.job_id, sub.job_dir) not in seen:
                known.append(sub)
                seen.add((sub.job_id, sub.job_dir))
    order = {id(s): i for i, s in enumerate(known)}
    return sorted(known, key=lambda s: (s.submitted_at, order[id(s)]), reverse=True)


def _parse_states(values: list[str]) -> set[str]:
    from nemo_runspec._suggest import did_you_mean
    from nemo_runspec.slurm import jobs as sj

    valid = {*sj.SLURM_STATES, sj.UNKNOWN, sj.SKIPPED, sj.UNREACHABLE}
    wanted: set[str] = set()
    for value in values:
        for word in (w.strip().upper() for w in value.split(",")):
            if not word:
                continue
            word = sj.SHORT_STATES.get(word, word)
            if word not in valid:
                raise CLIUsageError(f"unknown job state {word!r} for --state",
                                    hint=did_you_mean(word, valid) or "e.g. PENDING, RUNNING, COMPLETED, FAILED")
            wanted.add(word)
    return wanted


def _recipe_matches(sub: Submission, recipe: str) -> bool:
    return recipe in (sub.recipe, sub.name, sub.slurm_name) or bool(
        sub.recipe and sub.recipe.startswith(recipe.rstrip("/") + "/"))


# --------------------------------------------------------------------------- list


@app.command("list", cls=PlainParamsCommand)
@_one_line_errors
def list_jobs(
    recipe: Annotated[
        str | None,
        typer.Option("--recipe", metavar="RECIPE", show_default=False,
                     help="Only jobs of this recipe (nano3/pretrain; nano3 for all of nano3/*)."),
    ] = None,
    state: Annotated[
        list[str] | None,
        typer.Option("--state", metavar="STATE", show_default=False,
                     help="Only jobs in this Slurm state (RUNNING, PENDING, FAILED, ...; repeatable or "
                     "comma-separated; short codes like R and PD work)."),
    ] = None,
    limit: Annotated[
        str, typer.Option("-n", "--limit", metavar="N", help="Show at most N jobs (0: all).")
    ] = str(DEFAULT_LIMIT),
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (one object per job).")] = False,
) -> None:
    """Recent submissions, newest first, with their Slurm state; a pipe's stages are listed together.

    Examples:
        nemotron jobs list
        nemotron jobs list --recipe nano3/pretrain --state RUNNING
        nemotron jobs list -n 50 --state FAILED,TIMEOUT
    """
    from nemo_runspec._suggest import did_you_mean
    from nemo_runspec.slurm import jobs as sj
    from nemo_runspec.slurm.ledger import load_pipes, read_ledger

    try:
        n = int(limit)
        if n < 0:
            raise ValueError
    except ValueError:
        raise CLIUsageError(f"-n must be a whole number >= 0, not {limit!r}") from None
    wanted = _parse_states(state or [])
    subs, bad = read_ledger()
    _warn_bad_lines(bad)
    pipes = load_pipes()
    sweeps = [r for r in jobs_sweeps.sweeps_of() if not recipe or _recipe_matches(r[1], recipe)]
    entries = [s for s in _all_entries(subs, pipes) if not s.sweep]  # a sweep is one entry, not its arrays
    if recipe:
        matching = [s for s in entries if _recipe_matches(s, recipe)]
        if not matching and entries:
            recorded = {s.recipe for s in entries if s.recipe}
            raise CLIUsageError(f"no recorded job of recipe {recipe!r}",
                                hint=did_you_mean(recipe, recorded, listing=True))
        entries = matching
    if not entries and not pipes and not sweeps:
        if as_json:
            _out("[]")
        else:
            typer.echo("No jobs recorded yet (jobs submitted with --run/--batch are listed here).", err=True)
        return
    member = _membership(pipes, subs)
    # Which jobs to ask Slurm about: with a state filter all of them, else those shown
    # (the first N, with the other stages of their pipes).
    if wanted - {sj.SKIPPED}:
        asked = entries
    elif wanted:
        asked = []
    elif n:
        shown_pipes = {member[_key(s)][0].id for s in entries[:n] if _key(s) in member}
        asked = entries[:n] + [s for s in entries[n:] if _key(s) in member and member[_key(s)][0].id in shown_pipes]
    else:
        asked = entries
    tries: dict[str, list[Any]] = {}
    raw: dict[str, JobState] = {}  # the sweeps' arrays go in the same query: one sacct per cluster
    sweep_arrays = jobs_sweeps.arrays_of(sweeps) if not wanted or wanted - {sj.SKIPPED} else []
    states = _states(asked + sweep_arrays, attempts=tries, raw=raw) if asked or sweep_arrays else {}
    timed: list[tuple[str, tuple[Submission | None, JobState, str, Pipe | None]]] = []
    for sub in asked:
        st = states[_key(sub)]
        if wanted and st.state not in wanted:
            continue
        pipe, stage = member.get(_key(sub), (None, ""))
        timed.append((sub.submitted_at, (sub, st, stage, pipe)))
    if not recipe and (not wanted or sj.SKIPPED in wanted):
        for pipe in pipes:  # a skipped stage has no job; it is listed with its pipe
            for stage in pipe.stages:
                if stage.job_id is None:
                    timed.append((pipe.created, (None, sj.JobState("-", state=sj.SKIPPED), stage.name, pipe)))
    if sweep_arrays:
        timed += [(t, (sub, st, "", None)) for t, sub, st in jobs_sweeps.list_rows(sweeps, wanted - {sj.SKIPPED}, raw)]
    timed.sort(key=lambda t: t[0], reverse=True)  # stable: ties keep the ledger's order
    rows = _group_pipes([row for _, row in timed])
    if n:
        rows = rows[:n]
    if as_json:
        _out(json.dumps([_row_json(sub, st, stage, pipe, tries) for sub, st, stage, pipe in rows], indent=1))
        return
    if not rows:
        typer.echo("No job matches.", err=True)
        return
    from nemo_runspec.slurm.attempts import brief

    resilient = any(sub is not None and tries.get(sub.job_dir) for sub, _, _, _ in rows)
    table = []
    for sub, st, stage, pipe in rows:
        pipe_col = f"{pipe.id}:{stage}" if pipe is not None else "-"
        if sub is None:
            assert pipe is not None
            table.append(["-", sj.SKIPPED, "-", pipe.profile or "-", _when(pipe.created), pipe_col])
            continue
        table.append([sub.job_id, _state_text(st), sub.recipe or sub.name, sub.profile or "-",
                      _when(sub.submitted_at), pipe_col] + ([brief(tries.get(sub.job_dir, []))] if resilient else []))
    if resilient:  # the column only appears when a shown job has attempt records (docs/resilience.md)
        table = [row if len(row) == 7 else [*row, "-"] for row in table]
    _table(["JOB", "STATE", "RECIPE", "PROFILE", "SUBMITTED", "PIPE:STAGE"] + (["ATTEMPTS"] if resilient else []),
           table)


def _key(sub: Submission) -> tuple[str, str]:
    return (sub.job_id, sub.job_dir)


def _membership(pipes: list[Pipe], subs: list[Submission]) -> dict[tuple[str, str], tuple[Pipe, str]]:
    """``(job id, job dir) -> (pipe, stage name)`` for every submitted pipe stage."""
    out: dict[tuple[str, str], tuple[Pipe, str]] = {}
    for pipe in pipes:
        for stage in pipe.stages:
            sub = pipe.stage_submission(stage, subs)
            if sub is not None:
                out[_key(sub)] = (pipe, stage.name)
    return out


def _group_pipes(rows: list[Any]) -> list[Any]:
    """Newest first, a pipe's rows together (in its stage order) where its newest row is."""
    out: list[Any] = []
    done: set[str] = set()
    for row in rows:
        pipe = row[3]
        if pipe is None:
            out.append(row)
            continue
        if pipe.id in done:
            continue
        done.add(pipe.id)
        order = {st.name: i for i, st in enumerate(pipe.stages)}
        members = [r for r in rows if r[3] is not None and r[3].id == pipe.id]
        out.extend(sorted(members, key=lambda r: order.get(r[2], len(order))))
    return out


def _state_text(st: JobState) -> str:
    from nemo_runspec.slurm.jobs import UNKNOWN

    if st.finished and st.exit_code:
        return f"{st.state} ({st.exit_code})"
    if st.state == UNKNOWN:
        return f"UNKNOWN (last {st.last_known.split()[0]})" if st.last_known else "UNKNOWN?"
    return st.state + ("?" if st.unreached else "")


def _row_json(sub: Submission | None, st: JobState, stage: str, pipe: Pipe | None,
              tries: dict[str, list[Any]] | None = None) -> dict[str, Any]:
    from dataclasses import asdict

    data: dict[str, Any] = sub.to_json() if sub is not None else {"job_id": None}
    data.pop("v", None)
    data.update(state=st.state, exit_code=st.exit_code, reason=st.reason, nodes=st.nodes,
                pipe=pipe.id if pipe is not None else data.get("pipe"), stage=stage or None)
    if sub is not None and tries and tries.get(sub.job_dir):
        data["attempts"] = [asdict(a) for a in tries[sub.job_dir]]
    return data


# --------------------------------------------------------------------------- status


@app.command("status", cls=PlainParamsCommand)
@_one_line_errors
def status(
    ref: Annotated[str, typer.Argument(metavar="ID|NAME|PIPE", show_default=False,
                                       help="A job id, a job or recipe name, or a pipe id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """A job's Slurm state, exit code, reason, nodes, job dir and log; or every stage of a pipe.

    Examples:
        nemotron jobs status 168
        nemotron jobs status nano3-pretrain
        nemotron jobs status nano3-pipe-20250601-100000-a1b2
    """
    from nemo_runspec.slurm.ledger import Pipe, find, read_ledger

    if (sweep := jobs_sweeps.resolve(ref)) is not None:  # SWEEP or SWEEP:N (docs/sweeps.md)
        return jobs_sweeps.status(*sweep, as_json)
    subs, bad = read_ledger()
    _warn_bad_lines(bad)
    found = find(ref, submissions=subs)
    if isinstance(found, Pipe):
        _pipe_status(found, subs, as_json)
        return
    tries: dict[str, list[Any]] = {}
    st = _states([found], live=True, strict=True, attempts=tries)[(found.job_id, found.job_dir)]
    ending = job_ending(found, st) if st.finished else None
    if as_json:
        data = _row_json(found, st, "", None, tries)
        if ending is not None:
            data["outcome"] = ending.to_json()
        _out(json.dumps(data, indent=1))
        return
    _job_status(found, st, tries.get(found.job_dir, []), ending)


def _job_status(sub: Submission, st: JobState, attempts: list[Any] | None = None, ending: Any = None) -> None:
    from nemo_runspec.slurm.jobs import describe_tunnel

    exit_text = "-" if st.exit_code is None else f"{st.exit_code}" + (f" (sacct {st.raw_exit})" if st.raw_exit else "")
    lines = [("outcome", ending.outcome.message)] if ending is not None else []
    lines += [
        ("state", st.state + (f" ({st.note})" if st.note else "")),
        ("exit code", exit_text),
        ("reason", st.reason or "-"),
        ("nodes", st.nodes or "-"),
    ]
    if st.start or st.end:
        lines.append(("started", st.start or "-"))
        lines.append(("ended", st.end or "-"))
    lines += [
        ("recipe", sub.recipe or "-"),
        ("submitted", _when(sub.submitted_at)),
        ("profile", f"{sub.profile or '-'}" + (f" ({sub.env_file})" if sub.env_file else "")),
        ("cluster", describe_tunnel(sub)),
        ("job dir", sub.job_dir or "-"),
        ("log", sub.log_path or "-"),
    ]
    if sub.sbatch_log_path and sub.sbatch_log_path != sub.log_path:
        lines.append(("batch log", sub.sbatch_log_path))
    if sub.pipe:
        lines.append(("pipe", sub.pipe))
    _out(f"job {sub.job_id} ({sub.slurm_name or sub.name})")
    for label, value in lines:
        _out(f"  {label + ':':11} {value}")
    if attempts:
        from nemo_runspec.slurm.attempts import lines as attempt_lines

        _out("  attempts:")
        for text in attempt_lines(attempts):
            _out(f"    {text}")
    for text in status_details(ending) if ending is not None else []:
        _out(text)


def _pipe_status(pipe: Pipe, subs: list[Submission], as_json: bool) -> None:
    from nemo_runspec.slurm import jobs as sj

    members = [(st, pipe.stage_submission(st, subs)) for st in pipe.stages]
    states = _states([s for _, s in members if s is not None], live=True, strict=True)
    by_stage = {stage.name: states[(sub.job_id, sub.job_dir)] for stage, sub in members if sub is not None}
    causes = _stopped_by(pipe, by_stage)
    if as_json:
        data = {"id": pipe.id, "created": pipe.created, "profile": pipe.profile, "env_file": pipe.env_file,
                "stages": []}
        for stage, sub in members:
            st = states.get((sub.job_id, sub.job_dir)) if sub is not None else None
            data["stages"].append({
                "name": stage.name, "job_id": stage.job_id, "depends_on": list(stage.depends_on),
                "skipped": stage.skipped, "state": st.state if st else sj.SKIPPED,
                "exit_code": st.exit_code if st else None,
                "reason": causes.get(stage.name) or (st.reason if st else ""),
                "job_dir": sub.job_dir if sub else None, "log_path": sub.log_path if sub else None,
            })
        _out(json.dumps(data, indent=1))
        return
    _out(f"pipe {pipe.id} (created {_when(pipe.created)}, profile {pipe.profile or '-'})")
    rows = []
    for stage, sub in members:
        if sub is None:
            rows.append([stage.name, "-", sj.SKIPPED, "-", ", ".join(stage.depends_on) or "-", "-"])
            continue
        st = states[(sub.job_id, sub.job_dir)]
        rows.append([stage.name, sub.job_id, st.state, "-" if st.exit_code is None else str(st.exit_code),
                     ", ".join(stage.depends_on) or "-", causes.get(stage.name) or st.reason or st.nodes or "-"])
    _table(["STAGE", "JOB", "STATE", "EXIT", "AFTER", "REASON/NODES"], rows)


def _stopped_by(pipe: Pipe, states: dict[str, JobState]) -> dict[str, str]:
    """Why a stage never ran: ``{stage: "dependency pretrain FAILED (exit 3)"}`` for each
    stage cancelled (by Slurm's --kill-on-invalid-dep or the following client) or left
    waiting on a dependency that can no longer be met, because a stage it waits for ended
    badly (the first such stage in pipe order; transitively, the one that failed)."""
    from nemo_runspec.slurm import jobs as sj

    depends = {stage.name: stage.depends_on for stage in pipe.stages}
    out: dict[str, str] = {}
    for stage in pipe.stages:
        st = states.get(stage.name)
        never_started = st is not None and st.start in ("", "Unknown", "None")
        blocked = st is not None and ((st.state.startswith("CANCELLED") and never_started)
                                      or (st.state == "PENDING" and "DependencyNeverSatisfied" in st.reason))
        if not blocked:
            continue
        for dep in depends[stage.name]:
            dst = states.get(dep)
            if dep in out:  # cancelled itself because of an earlier stage: name that one
                out[stage.name] = out[dep]
                break
            if dst is not None and dst.finished and dst.state != "COMPLETED" and dst.state != sj.SKIPPED:
                code = f" (exit {dst.exit_code})" if dst.exit_code else ""
                out[stage.name] = f"dependency {dep} {dst.state}{code}"
                break
    return out


# --------------------------------------------------------------------------- logs


@app.command("logs", cls=PlainParamsCommand)
@_one_line_errors
def logs(
    ref: Annotated[str, typer.Argument(metavar="ID|NAME|PIPE", show_default=False,
                                       help="A job id, a job or recipe name, or a pipe id.")],
    follow: Annotated[bool, typer.Option("-f", "--follow",
                                         help="Keep printing as the log grows until the job ends; "
                                              "exit with the job's exit code.")] = False,
    sbatch_log: Annotated[bool, typer.Option("--sbatch-log",
                                             help="The batch script's own log (startup commands, srun "
                                                  "errors) instead of the job's output.")] = False,
) -> None:
    """Print a job's log (the script's output); -f follows it until the job ends.

    For a pipe id, each stage's log in stage order; -f follows the whole chain stage
    by stage and exits with the first failing stage's exit code.

    Examples:
        nemotron jobs logs 168
        nemotron jobs logs -f 168
        nemotron jobs logs 168 --sbatch-log
    """
    from nemo_runspec.slurm import jobs as sj
    from nemo_runspec.slurm.ledger import Pipe, find, read_ledger

    if (sweep := jobs_sweeps.resolve(ref)) is not None:  # SWEEP:N (docs/sweeps.md)
        raise typer.Exit(jobs_sweeps.logs(*sweep, follow=follow, sbatch_log=sbatch_log))
    subs, bad = read_ledger()
    _warn_bad_lines(bad)
    found = find(ref, submissions=subs)
    if isinstance(found, Pipe):
        raise typer.Exit(pipe_logs(found, subs, follow=follow, sbatch_log=sbatch_log))
    path = (found.sbatch_log_path if sbatch_log else found.log_path) or found.log_path
    if not path:
        raise CLIUsageError(f"job {found.job_id} has no log path recorded")
    remote = sj.remote_for(found)
    try:
        raise typer.Exit(follow_log(remote, found, path) if follow else print_log(remote, found, path))
    finally:
        sj.close(remote)


# --------------------------------------------------------------------------- cancel


@app.command("cancel", cls=PlainParamsCommand)
@_one_line_errors
def cancel(
    ref: Annotated[str, typer.Argument(metavar="ID|NAME|PIPE", show_default=False,
                                       help="A job id, a job or recipe name, or a pipe id.")],
) -> None:
    """Cancel a job, or every stage of a pipe that has not finished (scancel).

    A job that never started leaves its 0600 secrets file in its job dir; that
    file is deleted too. With --dry-run, says what would be cancelled.

    Examples:
        nemotron jobs cancel 168
        nemotron jobs cancel nano3-pipe-20250601-100000-a1b2
    """
    from nemo_runspec.slurm import jobs as sj
    from nemo_runspec.slurm.ledger import Pipe, find, read_ledger

    if (sweep := jobs_sweeps.resolve(ref)) is not None:  # SWEEP or SWEEP:N (docs/sweeps.md)
        return jobs_sweeps.cancel(*sweep, dry=dry_run_requested())
    subs, bad = read_ledger()
    _warn_bad_lines(bad)
    found = find(ref, submissions=subs)
    targets = ([s for st in found.stages if (s := found.stage_submission(st, subs)) is not None]
               if isinstance(found, Pipe) else [found])
    what = f"pipe {found.id}" if isinstance(found, Pipe) else f"job {found.job_id}"
    if not targets:
        _out(f"{what}: no job to cancel (every stage was skipped)")
        return
    states = _states(targets, live=True, strict=True)
    dry = dry_run_requested()
    live = []
    for sub in targets:
        st = states[(sub.job_id, sub.job_dir)]
        if st.finished:
            _out(f"job {sub.job_id} already {st.state}; nothing to cancel")
            continue
        live.append(sub)
    for members in sj.by_connection(live):
        if dry:
            for sub in members:
                _out(f"would cancel job {sub.job_id} ({states[(sub.job_id, sub.job_dir)].state})")
            continue
        remote = sj.remote_for(members[0])
        try:
            sj.cancel_jobs(remote, members)
        finally:
            sj.close(remote)
        for sub in members:
            _out(f"cancelled job {sub.job_id} (was {states[(sub.job_id, sub.job_dir)].state})")
