"""The registry's locks follow the one rule (nemo_runspec.runtime.locks): a gone holder on this host
is taken over at once with one line, one on another host is named with how to clear it, and
a kernel flock kept by a process the holder left behind names that process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from socket import gethostname as this_host

import pytest

from nemo_runspec.artifacts.errors import ArtifactError
from nemo_runspec.artifacts.locking import FlockLock, LeaseLock, _write_synced


def lease(path: Path, timeout: float = 0.5) -> LeaseLock:
    return LeaseLock(str(path), create=_write_synced, read=lambda p: Path(p).read_bytes(), remove=os.unlink,
                     timeout=timeout, stale_after=3600)


def test_a_fresh_lease_of_a_gone_publisher_here_is_taken_over_at_once(tmp_path, capfd):
    path = tmp_path / ".lease"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    path.write_text(json.dumps({"owner": f"pid {dead} on {this_host()}", "token": "t", "time": time.time(),
                                "pid": int(dead), "host": this_host(), "start": 1, "since": "x"}))
    started = time.monotonic()
    lock = lease(path, timeout=30)
    assert lock.acquire()
    assert time.monotonic() - started < 5  # not the hour of stale_after
    assert f"took over the lock {path}: its holder (pid {dead} on {this_host()}" in capfd.readouterr().err
    lock.release()


def test_a_lease_from_another_host_is_waited_for_and_named_with_how_to_clear_it(tmp_path):
    path = tmp_path / ".lease"
    path.write_text(json.dumps({"owner": "pid 77 on gpu-12", "token": "t", "time": time.time(),
                                "pid": 77, "host": "gpu-12", "start": 1, "since": "x"}))
    with pytest.raises(ArtifactError) as err:
        lease(path).acquire()
    message = str(err.value)
    assert "(held by pid 77 on gpu-12)" in message and "which this machine cannot check" in message
    assert f"delete {path}" in message
    assert path.exists()


HOLD = """
import os, sys, time
from nemo_runspec.artifacts.locking import FlockLock
lock = FlockLock(sys.argv[1], timeout=5)
lock.acquire()
child = os.fork()
if child == 0:
    time.sleep(600)
print(child, flush=True)
time.sleep(600)
"""


def test_a_flock_kept_by_a_process_the_holder_left_behind_names_that_process(tmp_path):
    path = tmp_path / ".lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    child = int(holder.stdout.readline())
    try:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        with pytest.raises(ArtifactError) as err:
            FlockLock(str(path), timeout=0.3).acquire()
        message = str(err.value)
        assert f"(held by pid {holder.pid} on {this_host()})" in message
        assert f"that process is gone, but pid {child} still holds it" in message
    finally:
        os.kill(child, signal.SIGKILL)


def test_a_jobs_publish_records_what_the_path_held_and_what_it_read(tmp_path, monkeypatch):
    """Outside a job the metadata is stored as given; inside one (a local run, a pipe stage,
    a Slurm job) the publish adds ``contents`` and ``inputs``, and missing() reads them."""
    from nemo_runspec.artifacts import pins
    from nemo_runspec.artifacts.contents import missing
    from nemo_runspec.artifacts.pins import resolve
    from nemo_runspec.artifacts.registry import ArtifactRegistry

    for var in ("NEMOTRON_JOB_DIR", "NEMOTRON_PIPE_ID", "SLURM_JOB_ID"):
        monkeypatch.delenv(var, raising=False)
    # what this process resolved so far (other tests in this worker): a job's process starts empty
    monkeypatch.setattr(pins, "_CONSUMED", {})
    reg = ArtifactRegistry(tmp_path / "reg")
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "a.bin").write_bytes(b"abc")
    (data / "sub" / "b.idx").write_bytes(b"12345")
    (data / ".nemotron-data-prep.lock").write_text("held")
    plain = reg.publish("ds", data, metadata={"n": 1})
    assert plain.metadata == {"n": 1}
    monkeypatch.setenv("NEMOTRON_JOB_DIR", str(tmp_path))
    resolve(reg, "ds:latest", pins={})
    model = tmp_path / "model"
    model.mkdir()
    (model / "w.pt").write_bytes(b"w" * 10)
    art = reg.publish("model", model, metadata={"n": 2})
    assert art.metadata["inputs"] == {"ds:latest": "ds:v1"}
    assert art.metadata["contents"] == {"files": 1, "bytes": 10, "listing": {"w.pt": 10}}
    job_data = reg.publish("ds", data)
    assert job_data.metadata["contents"]["listing"] == {"a.bin": 3, "sub/b.idx": 5}  # the lock is left out
    assert missing(job_data.path, job_data.metadata["contents"]) == []
    (data / "sub" / "b.idx").write_bytes(b"1")
    (data / "a.bin").unlink()
    assert missing(job_data.path, job_data.metadata["contents"]) == ["a.bin", "sub/b.idx (size changed)"]


