"""``nemotron jobs``: the Slurm jobs (and pipes) submitted from here, found again by id or name.

Every job that ``--run``/``--batch`` (or a pipeline) submitted is in the
submission ledger (``$NEMOTRON_HOME/jobs/submissions.jsonl``,
:mod:`nemo_runspec.slurm.ledger`), with how its cluster was reached. These
commands ask that cluster about it again (``sacct``, else ``squeue``), here or
over the job's SSH tunnel, so nobody needs to remember a job dir.
"""

from __future__ import annotations

from typing import Annotated

import typer

from nemo_runspec.cli.recipe_typer import FastHelpGroup
from nemo_runspec.errors import CLIUsageError
from nemotron.cli.commands import jobs_list, jobs_status, jobs_sweeps
from nemotron.cli.commands.jobs_common import job_states, one_line_errors, out, warn_bad_lines
from nemotron.cli.commands.jobs_logs import follow_log, pipe_logs, print_log
from nemotron.cli.commands.nano3.data.import_._common import PlainParamsCommand, dry_run_requested

app = typer.Typer(
    name="jobs",
    help="List, inspect, follow and cancel the Slurm jobs and pipes submitted from here "
    "(recorded in $NEMOTRON_HOME/jobs/submissions.jsonl).",
    cls=FastHelpGroup,
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


# --------------------------------------------------------------------------- list


@app.command("list", cls=PlainParamsCommand)
@one_line_errors
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
    ] = str(jobs_list.DEFAULT_LIMIT),
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (one object per job).")] = False,
) -> None:
    """Recent submissions, newest first, with their Slurm state; a pipe's stages are listed together.

    Examples:
        nemotron jobs list
        nemotron jobs list --recipe nano3/pretrain --state RUNNING
        nemotron jobs list -n 50 --state FAILED,TIMEOUT
    """
    jobs_list.list_jobs(recipe, state, limit, as_json)


# --------------------------------------------------------------------------- status


@app.command("status", cls=PlainParamsCommand)
@one_line_errors
def status(
    ref: Annotated[str, typer.Argument(metavar="ID|NAME|PIPE|SWEEP[:N]", show_default=False,
                                       help="A job id, a job or recipe name, a pipe id, or a sweep id "
                                            "(SWEEP:N or ARRAY_N for one point).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """A job's Slurm state, exit code, reason, nodes, job dir and log; every stage of a pipe; or every point of a sweep.

    A sweep's table has each point's state, exit code, the last loss its log
    printed and its overrides (docs/sweeps.md).

    Examples:
        nemotron jobs status 168
        nemotron jobs status nano3-pretrain
        nemotron jobs status nano3-pipe-20250601-100000-a1b2
        nemotron jobs status nano3-pretrain-sweep-3f2a9c1b8e07
    """
    jobs_status.status(ref, as_json)


# --------------------------------------------------------------------------- logs


@app.command("logs", cls=PlainParamsCommand)
@one_line_errors
def logs(
    ref: Annotated[str, typer.Argument(metavar="ID|NAME|PIPE|SWEEP[:N]", show_default=False,
                                       help="A job id, a job or recipe name, a pipe id, or a sweep id "
                                            "(SWEEP:N or ARRAY_N for one point).")],
    follow: Annotated[bool, typer.Option("-f", "--follow",
                                         help="Keep printing as the log grows until the job ends; "
                                              "exit with the job's exit code.")] = False,
    sbatch_log: Annotated[bool, typer.Option("--sbatch-log",
                                             help="The batch script's own log (startup commands, srun "
                                                  "errors) instead of the job's output.")] = False,
) -> None:
    """Print a job's log (the script's output); -f follows it until the job ends.

    For a pipe id, each stage's log in stage order; -f follows the whole chain stage
    by stage and exits with the first failing stage's exit code. For SWEEP:N, point
    N's log; for SWEEP, every point's, one after another.

    Examples:
        nemotron jobs logs 168
        nemotron jobs logs -f 168
        nemotron jobs logs 168 --sbatch-log
        nemotron jobs logs -f nano3-pretrain-sweep-3f2a9c1b8e07:3
    """
    from nemo_runspec.slurm import jobs as sj
    from nemo_runspec.slurm.ledger import Pipe, find, read_ledger

    if (sweep := jobs_sweeps.resolve(ref)) is not None:  # SWEEP:N (docs/sweeps.md)
        raise typer.Exit(jobs_sweeps.logs(*sweep, follow=follow, sbatch_log=sbatch_log))
    subs, bad = read_ledger()
    warn_bad_lines(bad)
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
@one_line_errors
def cancel(
    ref: Annotated[str, typer.Argument(metavar="ID|NAME|PIPE|SWEEP[:N]", show_default=False,
                                       help="A job id, a job or recipe name, a pipe id, or a sweep id "
                                            "(SWEEP:N or ARRAY_N for one point).")],
) -> None:
    """Cancel a job, every stage of a pipe, or a sweep's points, that have not finished (scancel).

    A job that never started leaves its 0600 secrets file in its job dir; that
    file is deleted too. SWEEP cancels every array of the sweep, SWEEP:N one
    point's array task. With --dry-run, says what would be cancelled.

    Examples:
        nemotron jobs cancel 168
        nemotron jobs cancel nano3-pipe-20250601-100000-a1b2
        nemotron jobs cancel nano3-pretrain-sweep-3f2a9c1b8e07:3
    """
    from nemo_runspec.slurm import jobs as sj
    from nemo_runspec.slurm.ledger import Pipe, find, read_ledger

    if (sweep := jobs_sweeps.resolve(ref)) is not None:  # SWEEP or SWEEP:N (docs/sweeps.md)
        return jobs_sweeps.cancel(*sweep, dry=dry_run_requested())
    subs, bad = read_ledger()
    warn_bad_lines(bad)
    found = find(ref, submissions=subs)
    targets = ([s for st in found.stages if (s := found.stage_submission(st, subs)) is not None]
               if isinstance(found, Pipe) else [found])
    what = f"pipe {found.id}" if isinstance(found, Pipe) else f"job {found.job_id}"
    if not targets:
        out(f"{what}: no job to cancel (every stage was skipped)")
        return
    states = job_states(targets, live=True, strict=True)
    dry = dry_run_requested()
    live = []
    for sub in targets:
        st = states[(sub.job_id, sub.job_dir)]
        if st.finished:
            out(f"job {sub.job_id} already {st.state}; nothing to cancel")
            continue
        live.append(sub)
    for members in sj.by_connection(live):
        if dry:
            for sub in members:
                out(f"would cancel job {sub.job_id} ({states[(sub.job_id, sub.job_dir)].state})")
            continue
        remote = sj.remote_for(members[0])
        try:
            sj.cancel_jobs(remote, members)
        finally:
            sj.close(remote)
        for sub in members:
            out(f"cancelled job {sub.job_id} (was {states[(sub.job_id, sub.job_dir)].state})")
