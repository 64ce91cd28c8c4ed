"""invoke (under nemo-run's ``LocalTunnel`` and packagers), made to stop on an interrupt.

invoke 2.2's ``Local`` runner answers a ``KeyboardInterrupt`` while a command runs by
writing ``\\x03`` to the command's stdin and waiting on. Ctrl-C from a terminal
reaches the command too, so it ends and nothing is lost; but SIGTERM or SIGHUP
(which :mod:`nemo_runspec.runtime.signals` turns into a ``KeyboardInterrupt``) reach only
this process: the command ran on, the interrupt was swallowed, and a pipeline
went on to submit every stage and exit 0. :func:`stop_commands_on_interrupt`
makes ``Local.send_interrupt`` kill the command and everything it started, then
raise the interrupt again. (fabric's ``Remote`` runner already raises it.)
"""

from __future__ import annotations

from typing import Any


def stop_commands_on_interrupt() -> None:
    """Patch invoke's ``Local.send_interrupt`` (idempotent; see the module docstring)."""
    from invoke.runners import Local

    if getattr(Local.send_interrupt, "_nemotron", False):
        return

    def send_interrupt(self: Any, interrupt: KeyboardInterrupt) -> None:
        from nemo_runspec.runtime.lifeline import kill_tree

        pid = self.pid if self.using_pty else getattr(self.process, "pid", None)
        if pid:
            kill_tree(pid)
        raise interrupt

    send_interrupt._nemotron = True  # type: ignore[attr-defined]
    Local.send_interrupt = send_interrupt  # type: ignore[method-assign]
