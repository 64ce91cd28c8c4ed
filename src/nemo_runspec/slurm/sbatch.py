"""``sbatch`` that an interrupt stops, and what follows when it did.

A stop signal (Ctrl-C, SIGTERM, SIGHUP) while ``sbatch`` runs stops it at once:
the CLI never waits out a slow ``sbatch``, and ``sbatch`` never outlives the CLI
(here it is a child tied to our life, :mod:`nemo_runspec.runtime.lifeline`; over SSH the
remote ``sbatch`` of this script is killed). A stopped ``sbatch`` may still have
reached the controller, so Slurm is asked for a job of ours that runs this very
script (``squeue --me -n NAME -o '%i|%o'``: the script's path holds the
experiment id, so it names one submission), twice, a second apart; a job found
is cancelled. One line says which it was:

- ``interrupted while sbatch ran: nothing was submitted``;
- ``interrupted while sbatch ran: Slurm had queued job N already; cancelled it``;
- the job could not be cancelled: it is kept (the interrupt carries its id as
  ``accepted_job_id``, as after an ``sbatch`` that answered) and the line says
  how to cancel it;
- Slurm could not be asked: the line says how to check.

The interrupt is then raised again, so the caller removes what it created.
"""

from __future__ import annotations

import re
import shlex
import sys
import time
from collections.abc import Callable, Sequence

Run = Callable[[str], tuple[int, str, str]]


def sbatch(argv: Sequence[str], *, script: str, job_name: str | None, run: Run, local: bool) -> tuple[int, str, str]:
    """Run ``argv`` (an ``sbatch`` command line ending in ``script``) where the job is
    submitted: here (``local``, :func:`nemo_runspec.slurm.client.run_here`) or through
    ``run`` (an SSH tunnel). Returns ``(exit code, stdout, stderr)``; on an interrupt
    see the module docstring."""
    command = shlex.join(argv)
    try:
        if local:
            from nemo_runspec.slurm.client import run_here

            return run_here(command)
        return run(command)
    except KeyboardInterrupt as exc:
        from nemo_runspec.runtime.signals import deferred

        try:
            with deferred():  # a second Ctrl-C must not cut the clean-up short
                settle_stopped(exc, script=script, job_name=job_name, run=run, local=local)
        except KeyboardInterrupt:
            pass  # the first interrupt decides
        raise


def settle_stopped(exc: BaseException, *, script: str, job_name: str | None, run: Run, local: bool,
                   say: Callable[[str], None] | None = None) -> None:
    """After ``sbatch`` of ``script`` was stopped: find a job it queued anyway, cancel it,
    say what happened. A job that cannot be cancelled is set on ``exc`` as
    ``accepted_job_id`` (the caller then keeps its files and says how to reach it)."""
    say = say or (lambda msg: print(msg, file=sys.stderr, flush=True))
    if not local:  # the remote sbatch does not die with our connection
        run(f"pkill -TERM -f -- {shlex.quote(_own_pattern(script))}")
    found: list[str] | None = []
    for attempt in range(2):
        if attempt:
            time.sleep(1.0)  # a request already sent may still be being processed
        found = queued_jobs(run, script=script, job_name=job_name)
        if found is None or found:
            break
    if found is None:
        say(f"interrupted while sbatch ran: stopped it, but Slurm could not be asked whether it queued "
            f"the job; check with: squeue --me -o '%i %o' | grep {shlex.quote(script)}")
        return
    if not found:
        say("interrupted while sbatch ran: nothing was submitted")
        return
    ids = ", ".join(found)
    rc, out, err = run("scancel " + " ".join(found))
    if rc == 0:
        say(f"interrupted while sbatch ran: Slurm had queued job {ids} already; cancelled it")
        return
    why = " ".join((err or out).split()) or f"scancel exited {rc}"
    exc.accepted_job_id = found[0]  # type: ignore[attr-defined]
    say(f"interrupted while sbatch ran: Slurm queued job {ids}, which could not be cancelled ({why}); "
        f"cancel it with: nemotron jobs cancel {found[0]} (or scancel {ids})")


def queued_jobs(run: Run, *, script: str, job_name: str | None) -> list[str] | None:
    """Ids of this user's queued jobs named ``job_name`` that run ``script``; None when
    ``squeue`` does not answer."""
    try:
        name = f" -n {shlex.quote(job_name)}" if job_name else ""
        rc, out, _ = run(f"squeue --me -h{name} -o '%i|%o'")
    except KeyboardInterrupt:
        raise
    except Exception:  # noqa: BLE001 - an unanswered question is reported as such
        return None
    if rc != 0:
        return None
    ids = []
    for line in out.splitlines():
        job_id, _, command = line.strip().partition("|")
        if command.strip() == script and job_id.strip():
            ids.append(job_id.strip())
    return ids


def _own_pattern(script: str) -> str:
    """A ``pkill -f`` regex for processes whose command line holds ``script``, written so
    that it does not match the shell that runs ``pkill`` itself."""
    return f"[{re.escape(script[0])}]{re.escape(script[1:])}" if script else script
