"""lifeline: a child (and its whole process group) dies with the process that started it.

Each case runs a real parent process that starts real children through
:func:`nemo_runspec.runtime.lifeline.spawn`, then kills the parent; the children must go.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.processes import alive as _alive

PARENT = textwrap.dedent('''
    import json, os, sys, time
    from pathlib import Path
    from nemo_runspec.runtime import lifeline
    out = Path(sys.argv[1])
    # a child that starts a grandchild in its group, and ignores SIGTERM (the watcher must SIGKILL it)
    child = lifeline.spawn(["sh", "-c", "trap '' TERM; sleep 300 & echo $! > %s; sleep 300" % (out / "grand")])
    lifeline.remove_if_killed(out / "half-made")
    (out / "half-made").mkdir()
    (out / "half-made" / "secret").write_text("x")
    kept = out / "kept"
    kept.mkdir()
    lifeline.remove_if_killed(kept)
    lifeline.keep(kept)
    while not (out / "grand").exists() or not (out / "grand").read_text().strip():
        time.sleep(0.02)
    (out / "pids").write_text(json.dumps([child.pid, int((out / "grand").read_text())]))
    time.sleep(300)
''')


def _start(tmp_path: Path) -> tuple[subprocess.Popen[bytes], list[int]]:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path)], start_new_session=True)
    deadline = time.monotonic() + 60
    while not (tmp_path / "pids").exists():
        assert parent.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    import json

    return parent, json.loads((tmp_path / "pids").read_text())


def _gone(pids: list[int], within: float) -> bool:
    deadline = time.monotonic() + within
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(_alive(p) for p in pids)


def test_sigkill_of_the_parent_kills_the_child_and_its_group_and_removes_registered_paths(tmp_path):
    parent, pids = _start(tmp_path)
    try:
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        assert _gone(pids, within=15), [p for p in pids if _alive(p)]  # the grandchild ignores SIGTERM
        deadline = time.monotonic() + 10
        while (tmp_path / "half-made").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not (tmp_path / "half-made").exists()
        assert (tmp_path / "kept").is_dir()  # kept: not removed
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_the_children_of_a_parent_that_ends_normally_are_stopped_too(tmp_path):
    """The parent's own exit (an uncaught error, sys.exit) is no different for the watcher."""
    parent, pids = _start(tmp_path)
    try:
        os.kill(parent.pid, signal.SIGTERM)  # Python's default: the process just ends
        parent.wait()
        assert _gone(pids, within=15)
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_descendants_lists_the_whole_tree(tmp_path):
    from nemo_runspec.runtime.lifeline import descendants, kill_tree

    proc = subprocess.Popen(["sh", "-c", "sleep 300 & sh -c 'sleep 300 & wait' & wait"])
    try:
        deadline = time.monotonic() + 10
        while len(descendants(proc.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        below = descendants(proc.pid)
        assert len(below) == 3  # a sleep, the inner sh, and its sleep
        kill_tree(proc.pid)
        proc.wait(timeout=10)
        assert _gone(below, within=10)
    finally:
        if proc.poll() is None:
            proc.kill()


def _sleeps(seconds: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == f"sleep\0{seconds}\0".encode() and _alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def test_kill_tree_misses_no_child_forked_while_it_works():
    """A command that keeps forking (a shell script about to start its next step): a child
    born between the look at /proc and the kill would be left behind, holding the pipes a
    caller waits on. Each round the tree is stopped first, so no child escapes."""
    from nemo_runspec.runtime.lifeline import kill_tree

    mark = str(3000 + os.getpid() % 1000) + ".25"
    leftovers: list[int] = []
    try:
        for _ in range(10):  # each round a few hundred children, killed while they are being born
            proc = subprocess.Popen(["bash", "-c", f"for i in $(seq 300); do sleep {mark} & done; wait"])
            deadline = time.monotonic() + 10
            while len(_sleeps(mark)) < 20 and time.monotonic() < deadline:
                time.sleep(0.01)
            kill_tree(proc.pid)
            proc.wait(timeout=10)
            time.sleep(0.05)
            leftovers = _sleeps(mark)
            assert leftovers == []
    finally:
        for pid in _sleeps(mark):
            os.kill(pid, signal.SIGKILL)

STORM = '''
import os, signal, sys, threading, time
from nemo_runspec.runtime import lifeline
from nemo_runspec.runtime import signals
signals.install()
stop = False
def fire():  # Ctrl-C at the terminal, again and again: SIGINT to the whole process group
    while not stop:
        os.killpg(os.getpgid(0), signal.SIGINT)
        time.sleep(0.001)
spawned, deadline, firing = 0, time.monotonic() + float(sys.argv[1]), None
while time.monotonic() < deadline:
    try:
        if firing is None:
            firing = threading.Thread(target=fire, daemon=True)
            firing.start()
        child = lifeline.spawn(["true"])
        lifeline.release(child.pid)
        child.wait()
        spawned += 1
    except KeyboardInterrupt:
        pass
stop = True
'''


def test_a_ctrl_c_between_fork_and_exec_raises_nothing_in_the_child():
    """A Ctrl-C to the process group can reach a child between fork and its own session; the
    child must not run our KeyboardInterrupt handler there (it printed 'Exception ignored in
    _after_fork' with a traceback on the user's terminal, seen in the queue-wait e2e test)."""
    proc = subprocess.run([sys.executable, "-c", STORM, "3"], capture_output=True, text=True, timeout=60,
                          start_new_session=True)
    assert "_after_fork" not in proc.stderr and "in run\n" not in proc.stderr, proc.stderr[-3000:]
