"""``nemotron jobs list``: recent submissions, pipes and sweeps, newest first, with their
states from one query per cluster (a sweep's arrays in the same query)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import typer

from nemo_runspec.errors import CLIUsageError
from nemotron.cli.commands import jobs_sweeps
from nemotron.cli.commands.jobs_common import (
    job_states,
    out,
    print_table,
    row_json,
    state_text,
    warn_bad_lines,
    when,
)

if TYPE_CHECKING:
    from nemo_runspec.slurm.jobs import JobState
    from nemo_runspec.slurm.ledger import Pipe, Submission

#: how many jobs ``jobs list`` shows without ``-n``
DEFAULT_LIMIT = 20


def list_jobs(recipe: str | None, state: list[str] | None, limit: str, as_json: bool) -> None:
    """The body of ``nemotron jobs list`` (its options, as typed)."""
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
    warn_bad_lines(bad)
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
            out("[]")
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
    states = job_states(asked + sweep_arrays, attempts=tries, raw=raw) if asked or sweep_arrays else {}
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
        out(json.dumps([row_json(sub, st, stage, pipe, tries) for sub, st, stage, pipe in rows], indent=1))
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
            table.append(["-", sj.SKIPPED, "-", pipe.profile or "-", when(pipe.created), pipe_col])
            continue
        table.append([sub.job_id, state_text(st), sub.recipe or sub.name, sub.profile or "-",
                      when(sub.submitted_at), pipe_col] + ([brief(tries.get(sub.job_dir, []))] if resilient else []))
    if resilient:  # the column only appears when a shown job has attempt records (docs/resilience.md)
        table = [row if len(row) == 7 else [*row, "-"] for row in table]
    print_table(["JOB", "STATE", "RECIPE", "PROFILE", "SUBMITTED", "PIPE:STAGE"] + (["ATTEMPTS"] if resilient else []),
           table)


def _all_entries(subs: list[Submission], pipes: list[Pipe]) -> list[Submission]:
    """The ledger's jobs plus pipe stages it lacks, newest first."""
    from nemo_runspec.slurm.ledger import with_pipe_stages

    known = with_pipe_stages(subs, pipes)
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
