"""tests/conftest.py's rules on the stop signals, run on small suites of their own: a test
that leaves SIGINT ignored or SIGTERM blocked fails, naming what it left, and the next test
finds both as they were (so do the processes it starts); a suite started with them ignored
or blocked (a background job of a script) gives them their usual actions first."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from tests.test_ci_skip_rule import run_suite

#: a test of the small suites: a process it starts has SIGINT raising KeyboardInterrupt, nothing blocked
CHILD_TEST = """
import signal, subprocess, sys

def test_then_a_child_gets_the_default_actions():
    code = ("import signal; "
            "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler; "
            "assert not signal.pthread_sigmask(signal.SIG_BLOCK, ())")
    subprocess.run([sys.executable, "-c", code], check=True)
"""

SUITE = """
import signal


def test_leaves_sigint_ignored():
    signal.signal(signal.SIGINT, signal.SIG_IGN)

def test_leaves_sigterm_blocked():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})

def test_puts_back_what_it_changed():
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGINT, old)
""" + CHILD_TEST  # the child test last: after the two that leave something


def test_a_test_that_leaves_a_stop_signal_ignored_or_blocked_fails_and_the_next_is_clean(tmp_path):
    proc = run_suite(tmp_path, None, {"test_suite.py": SUITE})
    out = proc.stdout
    assert proc.returncode == 1, out
    # the two that left something pass their call and fail at teardown; the others pass
    assert "4 passed, 2 errors" in out and "FAILED" not in out, out
    assert "ERROR at teardown of test_leaves_sigint_ignored" in out and "left SIGINT ignored" in out, out
    assert "ERROR at teardown of test_leaves_sigterm_blocked" in out and "SIGTERM blocked" in out, out


def test_a_suite_started_with_sigint_ignored_and_sigterm_blocked_gives_them_back(tmp_path):
    """As a background job of a script inherits them (no job control: SIGINT ignored)."""

    def as_a_background_job() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})

    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_suite.py").write_text(CHILD_TEST)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parents[1]), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
                          preexec_fn=as_a_background_job)
    assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout
