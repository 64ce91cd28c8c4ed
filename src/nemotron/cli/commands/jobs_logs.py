"""How ``nemotron jobs logs`` prints and follows logs: one job's, a pipe's stage by stage,
or a one-allocation pipe's (``--launcher sbatch``), here or over the job's SSH tunnel."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import typer

from nemo_runspec.errors import ExecutionError

if TYPE_CHECKING:
    from nemo_runspec.slurm.jobs import JobState
    from nemo_runspec.slurm.ledger import Submission


def pipe_logs(pipe: Any, subs: list[Submission], *, follow: bool, sbatch_log: bool) -> int:
    """Each submitted stage's log in stage order; with ``follow`` each stage is followed
    until it ends, and the first failing stage's exit code ends it (the stages after it
    are cancelled by Slurm: --kill-on-invalid-dep)."""
    from nemo_runspec.slurm import jobs as sj

    if follow and pipe.launcher == "sbatch" and pipe.run_dir:
        return _follow_allocation(pipe, subs, sbatch_log=sbatch_log)
    for stage in pipe.stages:
        sub = pipe.stage_submission(stage, subs)
        if sub is None:
            typer.echo(f"== {stage.name}: skipped", err=True)
            continue
        path = (sub.sbatch_log_path if sbatch_log else sub.log_path) or sub.log_path or stage.log_path
        typer.echo(f"== {stage.name} (job {sub.job_id})", err=True)
        if not path:
            typer.echo(f"job {sub.job_id} has no log path recorded", err=True)
            continue
        remote = sj.remote_for(sub)
        try:
            code = follow_log(remote, sub, path) if follow else print_log(remote, sub, path)
        finally:
            sj.close(remote)
        if code != 0:
            if follow:
                typer.echo(f"pipe {pipe.id}: stage {stage.name} failed (exit {code})", err=True)
            return code
    return 0


def _follow_allocation(pipe: Any, subs: list[Submission], *, sbatch_log: bool) -> int:
    """Follow a one-allocation pipe (``--launcher sbatch``): each stage's log until its
    ``.rc`` file says it ended; the first failing stage's exit code ends it."""
    from nemo_runspec.pipeline.sbatch import follow_stages
    from nemo_runspec.slurm import jobs as sj

    stages = [(st, pipe.stage_submission(st, subs)) for st in pipe.stages]
    for st, sub in stages:
        if sub is None:
            typer.echo(f"== {st.name}: skipped", err=True)
    running = [(st.name, (sub.sbatch_log_path if sbatch_log else sub.log_path) or sub.log_path or st.log_path or "")
               for st, sub in stages if sub is not None]
    first = next((sub for _, sub in stages if sub is not None), None)
    if first is None:
        return 0
    remote = sj.remote_for(first)
    try:
        code = follow_stages(remote, first.job_id, running, pipe.run_dir, _write,
                             lambda msg: typer.echo(msg, err=True))
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: the command exits 128 + signal
        typer.echo(f"\nstopped following; allocation {first.job_id} keeps running "
                   f"(`nemotron jobs logs -f {pipe.id}` follows it again, `nemotron jobs cancel {pipe.id}` "
                   "cancels it)", err=True)
        raise
    finally:
        sj.close(remote)
    if code != 0:
        typer.echo(f"pipe {pipe.id}: failed (exit {code})", err=True)
    return code


def _write(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def print_log(remote: Any, sub: Submission, path: str) -> int:
    from nemo_runspec.slurm import jobs as sj

    if not sj.path_exists(remote, path):
        st = sj.query_states(remote, [sub.job_id], live=True)[sub.job_id]
        if not st.finished and st.state != sj.UNKNOWN:
            why = f" ({st.reason})" if st.reason else ""
            typer.echo(f"job {sub.job_id} is {st.state}{why}: no log yet at {path} (follow it with -f)", err=True)
            return 0
        raise ExecutionError(f"job {sub.job_id} ({st.state}) left no log at {path}",
                             hint=f"`nemotron jobs logs {sub.job_id} --sbatch-log` shows the batch script's log")
    data = remote.read_from(path, 0)
    _write(data)
    st = sj.query_states(remote, [sub.job_id])[sub.job_id]
    if st.finished:
        if data and not data.endswith(b"\n"):  # a job killed mid-line: the summary on a line of its own
            typer.echo("", err=True)
        _echo_ending(remote, sub, st)
    return 0


def _echo_ending(remote: Any, sub: Submission, st: JobState) -> None:
    """After a job's log: its outcome line and Slurm's state (stderr), the log paths when it
    failed (its log was just printed, so no tail)."""
    from nemo_runspec.errors import debug_enabled
    from nemo_runspec.slurm.ending import detail_lines, read_ending, state_line

    ending = read_ending(remote, sub, state=st.state, exit_code=st.exit_code, debug=debug_enabled())
    typer.echo(ending.outcome.message, err=True)
    typer.echo(state_line(ending), err=True)
    if not (ending.outcome.ok and ending.succeeded):
        for text in detail_lines(ending, tail=False):
            typer.echo(text, err=True)


def _left_the_queue(remote: Any, job_id: str) -> bool:
    """True when squeue says at once that the job is no longer queued (False when it is, or
    when the controller does not answer: following then says so and retries)."""
    from nemo_runspec.slurm.queue import squeue_state

    try:
        return squeue_state(remote, job_id, retry_for=0) is None
    except ExecutionError:
        return False


def follow_log(remote: Any, sub: Submission, path: str) -> int:
    from nemo_runspec.slurm import jobs as sj

    def on_state(st: JobState) -> None:
        if st.state == "PENDING":
            typer.echo(f"job {sub.job_id}: pending" + (f" ({st.reason})" if st.reason else ""), err=True)
        else:
            typer.echo(f"job {sub.job_id}: {st.state.lower()}" + (f" on {st.nodes}" if st.nodes else ""), err=True)

    from nemo_runspec.errors import debug_enabled
    from nemo_runspec.runtime.lognoise import StreamFilter

    def on_problem(text: str) -> None:
        typer.echo(f"warning: job {sub.job_id}: {text}", err=True)

    if not sj.path_exists(remote, path) and _left_the_queue(remote, sub.job_id):
        # it left the queue without a log: say so now, not after following
        st = sj.query_states(remote, [sub.job_id], live=True)[sub.job_id]
        ended = st.finished or (not st.accounting and not st.unreached)  # (no accounting: it left the queue)
        if ended and not sj.path_exists(remote, path):
            raise ExecutionError(f"job {sub.job_id} ({st.state}) left no log at {path}: deleted, or written "
                                 "where this machine cannot see it",
                                 hint=f"`nemotron jobs logs {sub.job_id} --sbatch-log` shows the batch script's log")
    # as under --run: C++ stack frames (and teardown warnings after a success) folded; the log keeps them
    noise = None if debug_enabled() else StreamFilter(note=f"; in {path}")

    def write(data: bytes) -> None:
        _write(noise.feed(data).encode() if noise is not None else data)

    try:
        final = sj.follow_log(remote, sub.job_id, path, write, on_state=on_state, on_problem=on_problem)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: the command exits 128 + signal (a pipe's too)
        typer.echo(f"\nstopped following job {sub.job_id}; it keeps running "
                   f"(`nemotron jobs logs -f {sub.job_id}` follows it again, `nemotron jobs cancel {sub.job_id}` "
                   "cancels it)", err=True)
        raise
    finally:
        if noise is not None:
            _write(noise.close().encode())
    if final.exit_code is None:
        note = f": {final.note}" if final.note else ""
        typer.echo(f"job {sub.job_id}: {final.state}{note}", err=True)
        return 0 if final.state == "COMPLETED" else 1
    _echo_ending(remote, sub, final)
    return final.exit_code


def job_ending(sub: Submission, st: JobState) -> Any:
    """How the ended job ``sub`` ended (:mod:`nemo_runspec.slurm.ending`), read from its logs
    on its cluster; None (with a warning) when they cannot be read."""
    from nemo_runspec.errors import NemoRunspecError, debug_enabled
    from nemo_runspec.slurm import jobs as sj
    from nemo_runspec.slurm.ending import read_ending

    try:
        remote = sj.remote_for(sub)
        try:
            return read_ending(remote, sub, state=st.state, exit_code=st.exit_code, debug=debug_enabled())
        finally:
            sj.close(remote)
    except (NemoRunspecError, OSError) as exc:
        typer.echo(f"warning: could not read the logs of job {sub.job_id}: {exc}", err=True)
        return None


def status_details(ending: Any) -> list[str]:
    """What ``jobs status`` prints after its fields for an ended job: who said the outcome
    when the job did not, and for a job that failed the tails of its logs."""
    from nemo_runspec.slurm.ending import detail_lines, source_note

    note = source_note(ending.outcome)
    return ([f"  ({note})"] if note else []) + [
        text for text in detail_lines(ending) if not text.startswith(("  log:", "  batch log:"))]
