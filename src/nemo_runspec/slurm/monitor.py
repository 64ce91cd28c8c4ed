"""Follow a submitted job: queue state, then its log, then its exit code from sacct.

Ctrl-C asks (on a terminal) whether to detach or cancel; without a terminal it
detaches. Either way the job is marked interrupted (:attr:`SubmittedJob.returncode`):
detaching prints how to follow the job and exits ``128 + signal`` (130 for Ctrl-C);
cancelling runs ``scancel``, removes the job's secrets file (a job that never started
never sourced it) and exits :data:`~nemo_runspec.slurm.prepared.CANCELLED_EXIT` (4).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from nemo_runspec.errors import ExecutionError
from nemo_runspec.secrets import redact_text
from nemo_runspec.slurm.prepared import CANCELLED_EXIT, SubmittedJob
from nemo_runspec.slurm.queue import (
    NEVER_STARTS,
    exit_code_from_sacct,
    final_sacct_info,
    squeue_start,
    squeue_state,
)
from nemo_runspec.slurm.remote import Remote, remove_secrets
from nemo_runspec.slurm.summary import follow_commands

if TYPE_CHECKING:
    from rich.console import Console


def describe_state(sub: SubmittedJob) -> str:
    """What Slurm last said about ``sub``: ``pending (BeginTime)``, ``running on n[1-2]``."""
    state = (sub.state or "unknown").lower()
    if state == "pending":
        return f"pending ({sub.reason})" if sub.reason not in ("", "None") else "pending"
    return f"{state} on {sub.nodes}" if sub.nodes else state


def _ask_detach_or_cancel(sub: SubmittedJob) -> str:
    if sys.stdin is not None and sys.stdin.isatty():
        from rich.markup import escape
        from rich.prompt import Prompt

        try:
            # Every piece of text is escaped: "[d]etach" is not a Rich tag.
            question = escape(f"Job {sub.job_id} is {describe_state(sub)}: [d]etach or [c]ancel it?")
            choice = Prompt.ask("\n" + question, choices=["d", "c"], default="d")
        except (KeyboardInterrupt, EOFError):  # Ctrl-C again (or Ctrl-D): leave the job alone
            return "detach"
        return "cancel" if choice == "c" else "detach"
    return "detach"


def detach(sub: SubmittedJob, console: Console) -> None:
    """Stop following ``sub`` after Ctrl-C: say that it keeps running and how to
    follow or cancel it, and mark it interrupted (the command exits ``128 + signal``)."""
    from rich.markup import escape

    sub.interrupted = True
    console.print(f"[yellow]Detached from job {sub.job_id}; it stays in Slurm "
                  f"({escape(describe_state(sub))}).[/]")
    for label, cmd in follow_commands(sub):
        console.print(f"  {label + ':':8} [cyan]{escape(cmd)}[/]", soft_wrap=True, highlight=False)


def follow(
    sub: SubmittedJob, *, console: Console | None = None, poll: float = 2.0, out: TextIO | None = None,
    on_interrupt: Callable[[SubmittedJob], str] | None = None,
) -> int | None:
    """Follow a submitted job to its end; returns (and stores) its exit code,
    :data:`CANCELLED_EXIT` when Ctrl-C cancelled it, or None when the user detached
    (``sub.interrupted`` is set either way).

    ``on_interrupt(sub)`` decides what Ctrl-C does (``"detach"`` or ``"cancel"``);
    the default asks on a terminal and detaches without one.
    """
    from rich.console import Console

    console = console or Console(stderr=True)
    out = out or sys.stdout
    assert sub.prepared is not None
    remote = Remote(sub.prepared)
    try:
        return _follow_loop(sub, remote, console, poll, out)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP (nemo_runspec.runtime.signals)
        from nemo_runspec.runtime.signals import exit_code

        sub.interrupt_code = exit_code(exc)
        # only Ctrl-C asks: a SIGTERM/SIGHUP sender is not at the terminal
        ask = on_interrupt or (_ask_detach_or_cancel if sub.interrupt_code == 130 else (lambda s: "detach"))
        action = ask(sub)
        if action == "cancel":
            from rich.markup import escape

            rc, _, err = remote.run(f"scancel {sub.job_id}")
            if rc != 0:  # not cancelled: it may still run, so it keeps its secrets; say how to reach it
                console.print(f"[red]Could not cancel job {sub.job_id}: {escape(' '.join(err.split()))}[/]",
                              highlight=False)
                detach(sub, console)
                return None
            remove_secrets(sub.prepared)  # a job that never started never sourced (and removed) it
            console.print(f"[yellow]Cancelled job {sub.job_id}[/]", highlight=False)
            sub.state, sub.exit_code, sub.interrupted = "CANCELLED", CANCELLED_EXIT, True
            return CANCELLED_EXIT
        detach(sub, console)
        return None


def _print_log_tail(sub: SubmittedJob, remote: Remote, console: Console, path: str, lines: int = 12) -> None:
    """The outcome line's message of the log at ``path`` (nemo_runspec.runtime.outcome), then its
    last ``lines`` other lines, the job's secrets masked."""
    from nemo_runspec.runtime.outcome import find_all, pick

    text = remote.read_from(path, 0).decode(errors="replace").splitlines()
    secret_vals = list(sub.prepared.secrets.values()) if sub.prepared else []
    said = pick(find_all(text))
    if said is not None:
        console.print(f"  {redact_text(said.message, secret_vals)}", soft_wrap=True, highlight=False, markup=False)
    tail = [line for line in text if not find_all([line])][-lines:]
    for line in tail:
        console.print(f"  | {redact_text(line, secret_vals)}", soft_wrap=True, highlight=False, markup=False)


def _dependency_failed(sub: SubmittedJob, remote: Remote, console: Console) -> int:
    """The job waits for a job that failed (the image import): it can never start.
    Cancel it and show why, from the failed job's log."""
    from rich.markup import escape

    remote.run(f"scancel {sub.job_id}")
    squash = sub.prepared.squash if sub.prepared is not None else None
    sub.state, sub.exit_code = "CANCELLED", 1
    what = (f"the import of its container image {squash.image} (Slurm job {sub.squash_job_id})"
            if squash is not None else "a job it depends on")
    console.print(f"[red]job {sub.job_id}: cancelled: {escape(what)} failed[/]", highlight=False)
    if squash is not None:
        _print_log_tail(sub, remote, console, squash.log_path)
        console.print(f"  squash log: {squash.log_path}", soft_wrap=True, highlight=False, markup=False)
    remove_secrets(sub.prepared)
    return 1


def _never_starts(sub: SubmittedJob, remote: Remote, console: Console, reason: str) -> int:
    """The job waits for something Slurm will never give it: cancel it and say why."""
    from rich.markup import escape

    rc, _, err = remote.run(f"scancel {sub.job_id}")
    sub.state, sub.exit_code = "CANCELLED", 1
    done = "cancelled it" if rc == 0 else f"could not cancel it ({' '.join(err.split())}): scancel {sub.job_id}"
    console.print(f"[red]job {sub.job_id} can never start: Slurm says {escape(reason)} "
                  f"({escape(NEVER_STARTS[reason])}); {escape(done)}[/]", highlight=False)
    console.print("  change the profile's nodes/time/partition/account (or ask for a limit change) "
                  "and submit again", highlight=False, markup=False)
    remove_secrets(sub.prepared)
    return 1


#: seconds between two ``squeue --start`` questions while a job is pending
START_EVERY = 30.0


def _follow_loop(sub: SubmittedJob, remote: Remote, console: Console, poll: float, out: TextIO) -> int:
    from rich.markup import escape

    from nemo_runspec.errors import debug_enabled
    from nemo_runspec.runtime.lognoise import StreamFilter

    offset = 0
    last_state: tuple[str, ...] | None = None
    last_start: str | None = None
    asked_start = -START_EVERY
    # C++ stack frames (and teardown warnings after a success) folded; the log keeps them
    noise = None if debug_enabled() else StreamFilter(note=f"; in {sub.log_path}")

    def pump() -> None:
        nonlocal offset
        data = remote.read_from(sub.log_path, offset)
        if data:
            offset += len(data)
            out.write(noise.feed(data) if noise is not None else data.decode(errors="replace"))
            out.flush()

    told: set[str] = set()

    def unreachable(text: str) -> None:  # said once; squeue is retried meanwhile, and the log still shown
        pump()
        if "controller" not in told:
            told.add("controller")
            console.print(f"[yellow]job {sub.job_id}: {escape(text)}; last known: "
                          f"{escape(describe_state(sub))}[/]", highlight=False)

    while True:
        q = squeue_state(remote, sub.job_id, on_retry=unreachable)
        if q is None:
            break
        state, reason, nodes = q
        sub.state, sub.reason, sub.nodes = state, reason or "", nodes or ""
        if state == "PENDING" and reason == "DependencyNeverSatisfied":
            return _dependency_failed(sub, remote, console)
        if state == "PENDING" and reason in NEVER_STARTS:
            return _never_starts(sub, remote, console, reason)
        if state == "PENDING":
            key: tuple[str, ...] = (state, reason)
            # The estimate is often unknown at first (the backfill scheduler has not
            # run yet): ask again every START_EVERY seconds, print when it changes.
            start = last_start
            if key != last_state or time.monotonic() - asked_start >= START_EVERY:
                start, asked_start = squeue_start(remote, sub.job_id), time.monotonic()
            if key != last_state or start != last_start:
                est = f", estimated start {start}" if start else ""
                console.print(f"[dim]job {sub.job_id}: {escape(describe_state(sub) + est)}[/]",
                              highlight=False)
            last_start = start
        else:
            key = (state, nodes)
            if key != last_state:
                console.print(f"[dim]job {sub.job_id}: {escape(describe_state(sub))}[/]",
                              highlight=False)
        last_state = key
        pump()
        time.sleep(poll)
    info = final_sacct_info(remote, sub.job_id, on_wait=pump)
    pump()
    if noise is not None:
        out.write(noise.close())
        out.flush()
    if info is None:
        from nemo_runspec.slurm.queue import sacct_problem

        why = sacct_problem(remote, sub.job_id)
        raise ExecutionError(f"job {sub.job_id} left the queue, but its final state could not be read: "
                             f"{why}; last known: {describe_state(sub)}",
                             hint=f"ask again later with: nemotron jobs status {sub.job_id}")
    sub.state = info["State"]
    sub.exit_code = exit_code_from_sacct(info["State"], info["ExitCode"])
    # A job cancelled or failed before its script ran never sourced (and so never
    # deleted) the secrets file: remove it now that the job is over.
    remove_secrets(sub.prepared)
    print_summary(sub, remote, console)
    return sub.exit_code


def print_summary(sub: SubmittedJob, remote: Remote, console: Console) -> None:
    """The end-of-job summary of ``sub`` (:mod:`nemo_runspec.slurm.ending`): the job's
    outcome line, Slurm's state and exit code, the tails of the logs when it failed."""
    from rich.markup import escape

    from nemo_runspec.errors import debug_enabled
    from nemo_runspec.slurm.ending import print_ending, read_ending

    secrets = list(sub.prepared.secrets.values()) if sub.prepared else []
    try:
        ending = read_ending(remote, sub, state=sub.state, exit_code=sub.exit_code, debug=debug_enabled())
    except Exception as exc:  # noqa: BLE001 - the job's end is known; its logs could not be read
        style = "green" if sub.exit_code == 0 else "red"
        console.print(f"[{style}]job {sub.job_id}: {escape(sub.state)} (exit code {sub.exit_code})[/]",
                      highlight=False)
        console.print(f"  (could not read the job's logs: {escape(' '.join(str(exc).split()))})", highlight=False)
        console.print(f"  log: {sub.log_path}", soft_wrap=True, highlight=False, markup=False)
        return
    print_ending(ending, console, secrets=secrets)
