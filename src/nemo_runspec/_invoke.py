"""invoke (under nemo-run's ``LocalTunnel`` and packagers), made to stop on an interrupt.

invoke 2.2's ``Local`` runner answers a ``KeyboardInterrupt`` while a command runs by
writing ``\\x03`` to the command's stdin and waiting on. Ctrl-C from a terminal
reaches the command too, so it ends and nothing is lost; but SIGTERM or SIGHUP
(which :mod:`nemo_runspec.runtime.signals` turns into a ``KeyboardInterrupt``) reach only
this process: the command ran on, the interrupt was swallowed, and a pipeline
went on to submit every stage and exit 0. :func:`stop_commands_on_interrupt`
makes ``Local.send_interrupt`` kill the command and everything it started, then
raise the interrupt again, and does the same for an interrupt that comes before
invoke waits on the command (while it starts its reader threads). (fabric's
``Remote`` runner already raises it.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from invoke.runners import Local, Result


def stop_commands_on_interrupt() -> None:
    """Patch invoke's ``Local.send_interrupt`` (idempotent; see the module docstring)."""
    from invoke.runners import Local

    if getattr(Local.send_interrupt, "_nemotron", False):
        return

    def send_interrupt(self: Local, interrupt: KeyboardInterrupt) -> None:
        _kill_command(self)
        raise interrupt

    run_body = Local._run_body

    def _run_body(self: Local, command: str, **kwargs: object) -> Result | None:
        # an interrupt between the command's start and invoke's wait loop (while it starts
        # its reader threads) never reaches send_interrupt: stop the command here too
        try:
            return run_body(self, command, **kwargs)
        except KeyboardInterrupt:
            _kill_command(self)
            raise

    send_interrupt._nemotron = True  # type: ignore[attr-defined]
    Local.send_interrupt = send_interrupt  # type: ignore[method-assign]
    Local._run_body = _run_body  # type: ignore[method-assign]


def _kill_command(runner: Local) -> None:
    """Kill the command a ``Local`` runner started, and everything below it, if it has one."""
    from nemo_runspec.runtime.lifeline import kill_tree

    pid = getattr(runner, "pid", None) if runner.using_pty else getattr(getattr(runner, "process", None), "pid", None)
    if pid:
        kill_tree(pid)
