"""One rule for every lock that names its holder: a gone holder here is taken over, a live
one is busy, one on another host is named with how to clear it. Real processes throughout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nemo_runspec.runtime.locks import Busy, Holder, HolderLock
from nemo_runspec.runtime.procs import is_running, start_time, this_host

HOLD = """
import sys, time
from nemo_runspec.runtime.locks import HolderLock
lock = HolderLock(sys.argv[1])
lock.try_acquire()
print("held", flush=True)
time.sleep(600)
"""


def hold(path: Path, *, fork_child: bool = False) -> tuple[subprocess.Popen[str], int | None]:
    """A process holding ``path`` (and, with ``fork_child``, a child it forked after taking it)."""
    code = HOLD if not fork_child else HOLD.replace(
        'print("held"', 'import os\nchild = os.fork()\nif child == 0:\n    time.sleep(600)\n'
                        'print(child, flush=True)\nprint("held"')
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
    child = int(proc.stdout.readline()) if fork_child else None
    assert proc.stdout.readline().strip() == "held"
    return proc, child


def test_a_live_holder_is_busy_and_named(tmp_path):
    path = tmp_path / "x.lock"
    proc, _ = hold(path)
    try:
        with pytest.raises(Busy) as busy:
            HolderLock(path).try_acquire()
        assert busy.value.holder.pid == proc.pid and busy.value.holder.here
        assert str(busy.value).startswith(f"pid {proc.pid} on {this_host()}")
    finally:
        proc.kill()
        proc.wait()


def test_a_sigkilled_holder_is_taken_over_even_while_a_forked_child_lives_on(tmp_path):
    """A kernel flock taken before a fork stays held by the child: the lock would stay
    'held by pid N' with N dead. A holder lock looks at the holder itself."""
    path = tmp_path / "x.lock"
    proc, child = hold(path, fork_child=True)
    try:
        proc.kill()
        proc.wait()
        assert is_running(child)
        lock = HolderLock(path)
        gone = lock.try_acquire()
        assert gone is not None and gone.pid == proc.pid
        assert Holder.parse(path.read_text()).pid == os.getpid()
        lock.release()
        assert not path.exists()
    finally:
        os.kill(child, 9)


def test_a_reused_pid_is_a_gone_holder(tmp_path):
    """The pid runs, but it is another process than the one that took the lock (start time)."""
    path = tmp_path / "x.lock"
    me = os.getpid()
    path.write_text(json.dumps({"pid": me, "host": this_host(), "start": (start_time(me) or 0) + 12345,
                                "since": "2020-01-01T00:00:00"}))
    gone = HolderLock(path).try_acquire()
    assert gone is not None and gone.pid == me and gone.since == "2020-01-01T00:00:00"
    assert is_running(me, start_time(me)) and not is_running(me, (start_time(me) or 0) + 12345)


def test_a_holder_on_another_host_is_never_taken_over(tmp_path):
    path = tmp_path / "x.lock"
    path.write_text(json.dumps({"pid": 1, "host": "login-07.elsewhere", "start": 5, "since": "2020-01-01T00:00:00"}))
    with pytest.raises(Busy) as busy:
        HolderLock(path).acquire(timeout=0.2)
    assert busy.value.holder.host == "login-07.elsewhere"
    assert path.exists()


def test_only_one_of_many_racing_processes_takes_over_a_gone_holder(tmp_path):
    path = tmp_path / "x.lock"
    path.write_text(json.dumps({"pid": 999999, "host": this_host(), "start": 1, "since": "x"}))
    racer = """
import sys, time
from nemo_runspec.runtime.locks import Busy, HolderLock
t = float(sys.argv[2])
while time.time() < t:
    pass
try:
    HolderLock(sys.argv[1]).try_acquire()
    print("won", flush=True)
    time.sleep(3)
except Busy:
    print("busy", flush=True)
"""
    start = time.time() + 1.5
    procs = [subprocess.Popen([sys.executable, "-c", racer, str(path), str(start)], stdout=subprocess.PIPE,
                              text=True) for _ in range(6)]
    results = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert sorted(results) == ["busy"] * 5 + ["won"], results


