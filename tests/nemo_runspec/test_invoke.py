"""invoke's local runner stops its command on an interrupt (_invoke.py): a SIGTERM
turned into KeyboardInterrupt kills the command and everything it started, and is raised again.
Real processes: a child Python runs invoke with a long command and interrupts itself."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

from tests.processes import alive as _alive

CHILD = textwrap.dedent("""
    import os, signal, sys, time
    import invoke
    from nemo_runspec._invoke import stop_commands_on_interrupt

    if sys.argv[1] == "patched":
        stop_commands_on_interrupt()
        stop_commands_on_interrupt()  # idempotent

    def interrupt(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    start = time.monotonic()
    try:
        invoke.run("sleep 7 & echo $! > " + sys.argv[2] + "; wait", hide=True, in_stream=False)
        print("finished", round(time.monotonic() - start, 1))
    except KeyboardInterrupt:
        print("interrupted", round(time.monotonic() - start, 1))
""")


def _run(mode: str, tmp_path) -> tuple[str, float, int]:
    pid_file = tmp_path / f"{mode}.pid"
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(pid_file)], capture_output=True, text=True,
                         timeout=60)
    word, seconds = out.stdout.split()
    return word, float(seconds), int(pid_file.read_text())


def test_an_interrupt_kills_the_command_and_what_it_started_then_is_raised(tmp_path):
    word, seconds, grandchild = _run("patched", tmp_path)
    assert word == "interrupted" and seconds < 5
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(grandchild)


EARLY = textwrap.dedent("""
    import os, sys, time
    import invoke
    from invoke.runners import Runner
    from nemo_runspec._invoke import stop_commands_on_interrupt

    stop_commands_on_interrupt()

    def create_io_threads(self):
        # the interrupt lands after the command started, before invoke waits on it
        while not os.path.exists(sys.argv[1]):
            time.sleep(0.01)
        raise KeyboardInterrupt
    Runner.create_io_threads = create_io_threads
    try:
        invoke.run("sleep 30 & echo $! > " + sys.argv[1] + "; wait", hide=True, in_stream=False)
        print("finished")
    except KeyboardInterrupt:
        print("interrupted")
""")


def test_an_interrupt_before_invoke_waits_kills_the_command_too(tmp_path):
    """A SIGTERM that arrives while invoke is still starting its reader threads never
    reaches ``send_interrupt``: seen in CI as a ``tar`` stand-in left running after the
    CLI had exited."""
    pid_file = tmp_path / "early.pid"
    out = subprocess.run([sys.executable, "-c", EARLY, str(pid_file)], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["interrupted"], out.stderr
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = _alive(grandchild)
    if alive:
        os.kill(grandchild, 9)
    assert not alive
