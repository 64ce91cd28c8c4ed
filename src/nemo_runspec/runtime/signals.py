"""SIGINT, SIGTERM and SIGHUP handled alike, and a critical section they cannot split.

- :func:`install` makes SIGTERM and SIGHUP raise :class:`Interrupted` (a
  ``KeyboardInterrupt``), so every ``except KeyboardInterrupt`` clean-up path
  (remove a half-made job dir and secrets file, detach from a followed job and
  print how to reach it) runs for them exactly as for Ctrl-C. The command then
  exits ``128 + signal`` (:func:`exit_code`).
- :func:`deferred` holds the three signals back (blocked, not ignored) for the
  length of a short call that must not be split, such as the clean-up after an
  interrupted ``sbatch`` (:mod:`nemo_runspec.slurm.sbatch`): the signal is
  delivered as soon as the call has returned. ``sbatch`` itself is not deferred:
  an interrupt stops it at once, and a job it queued anyway is found and cancelled.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

#: the signals a user or a scheduler sends to stop the CLI
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Ctrl-C's KeyboardInterrupt would be."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}")


_RECEIVED: list[int] = []


def _raise(signum: int, _frame: FrameType | None) -> None:
    _RECEIVED.append(signum)
    raise Interrupted(signum)


def install() -> None:
    """SIGINT, SIGTERM and SIGHUP raise :class:`Interrupted` (a ``KeyboardInterrupt``) in
    the main thread and are remembered (:func:`received`). A no-op outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in STOP_SIGNALS:
        signal.signal(sig, _raise)


def received(since: int = 0) -> int | None:
    """The last stop signal this process got since :func:`install` (or since ``since``, a
    :func:`mark`), if any (a framework that turns KeyboardInterrupt into an exit code, as
    Typer does, loses which it was)."""
    return _RECEIVED[-1] if len(_RECEIVED) > since else None


def mark() -> int:
    """A point to ask :func:`received` from: signals before it (an earlier, handled
    interrupt of a long-lived process) do not count."""
    return len(_RECEIVED)


def exit_code(exc: BaseException) -> int:
    """The exit status for an interrupt: ``128 + signal`` (130 for Ctrl-C)."""
    return 128 + getattr(exc, "signum", signal.SIGINT)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP back for the body: a signal that arrives is only
    noted, and delivered again (with the handlers from before) once the body is done.

    The signals are also blocked in this thread for the length of the body, which the
    processes it starts inherit: a Ctrl-C sent to the whole process group does not
    stop a half-done ``sbatch`` either. (Blocking alone is not enough: another thread
    of this process may take the signal, and Python runs handlers in the main thread
    whatever its mask.)
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda signum, _frame: noted.append(signum))
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)  # a pending one is noted now
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        if noted:
            signal.raise_signal(noted[0])  # as if it came now: the usual handler decides
