"""Copying a local job's output (execution/output_copy.py): unchanged, its end kept, and never held open by a process that escaped the group."""

from __future__ import annotations

import os
import shlex
import signal
import sys
import time

from nemo_runspec.execution.local import run_child
from tests.processes import alive as _alive


def test_output_goes_through_unchanged_and_its_end_is_kept(tmp_path, capfd):
    """Progress lines (\\r), a last line without a newline and both streams reach the
    terminal byte for byte; the copy keeps each stream's last lines, older ones dropped
    past ``keep``."""
    from nemo_runspec.execution.output_copy import OutputCopy

    body = ("import sys\n"
            "for i in range(200): print(f'line {i:03d}', flush=True)\n"
            "sys.stderr.write('error: boom\\n'); sys.stderr.flush()\n"
            "sys.stdout.write('10%\\r50%\\r100%\\n'); sys.stdout.write('no newline'); sys.stdout.flush()\n")
    output = OutputCopy(keep=200)
    code = run_child([sys.executable, "-c", body], cwd=tmp_path, env=os.environ, output=output)
    assert code == 0
    out, err = capfd.readouterr()
    assert out == "".join(f"line {i:03d}\n" for i in range(200)) + "10%\r50%\r100%\nno newline"
    assert err == "error: boom\n"
    kept = output.lines
    # each stream keeps its own end (a flood on stdout does not push stderr's last line out)
    assert "error: boom" in kept
    printed = [k for k in kept if k != "error: boom"]
    assert printed[-3:] == ["line 199", "10%\r50%\r100%", "no newline"]
    assert "line 000" not in printed and sum(len(k) + 1 for k in printed[1:]) <= 200


def test_a_process_that_escaped_the_group_and_holds_the_output_does_not_hold_the_run(tmp_path):
    from nemo_runspec.execution import output_copy
    from nemo_runspec.execution.output_copy import OutputCopy

    pidfile = tmp_path / "escaped.pid"
    output = OutputCopy()
    start = time.time()
    escape = f"import os, time; os.setsid(); open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    code = run_child(["bash", "-c", f"{sys.executable} -c {shlex.quote(escape)} & "
                                    f"while [ ! -s {pidfile} ]; do sleep 0.1; done; echo started; exit 4"],
                     cwd=tmp_path, env=os.environ, output=output)
    escaped = int(pidfile.read_text())
    try:
        assert _alive(escaped)  # it still holds the output pipe
        assert code == 4 and "started" in output.lines
        assert time.time() - start < output_copy.DRAIN_SECONDS + 10
    finally:
        os.kill(escaped, signal.SIGKILL)
