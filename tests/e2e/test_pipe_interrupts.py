"""`nemotron nano3 pipe` stopped by a signal to the CLI alone, on the real cluster.

- ``--batch`` given SIGTERM (or SIGHUP) while a later stage is being packaged: the
  stages already queued are cancelled, nothing is printed on stdout, exit 128+N
  (it used to exit 0 with the whole chain queued: invoke swallowed the interrupt);
- ``--batch`` killed with SIGKILL half-way: the stages it had queued are cancelled
  by its watcher, so no half chain is left;
- ``--run`` given SIGTERM while it follows a stage: it says it stopped following
  the pipe (id, how to follow it again or cancel it) and leaves the chain alone
  (it used to cancel every later stage as if the followed one had failed);
- ``jobs logs -f PIPE`` given SIGTERM: it says it stopped following, exit 143, and
  does not call the stage failed.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import cli_env

pytestmark = [pytest.mark.slurm]

NEMOTRON = Path(sys.executable).with_name("nemotron")


@pytest.fixture
def home(tmp_path: Path, slurm_cluster) -> dict:
    (tmp_path / "bin").mkdir()
    env = cli_env(tmp_path, slurm_cluster, f'batch_partition = "{slurm_cluster.batch_partition}"\nnodes = 1\n',
                  time="00:10:00", PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    return {"env": env, "tmp": tmp_path, "mark": tmp_path / "mark", "ids": set()}


@pytest.fixture(autouse=True)
def cancel_what_tests_submitted(home):
    yield
    if home["ids"]:
        subprocess.run(["scancel", *sorted(home["ids"])], capture_output=True)


def tar_slow_once_a_stage_is_queued(home: dict) -> Path:
    """``tar`` (extracting a stage's package) waits once the ledger holds a queued stage."""
    ledger = home["tmp"] / "home" / "jobs" / "submissions.jsonl"
    path = home["tmp"] / "bin" / "tar"
    path.write_text(f"#!/bin/sh\nif [ -s {ledger} ]; then touch {home['mark']}; sleep 30; fi\n"
                    f"exec {shutil.which('tar')} \"$@\"\n")
    path.chmod(0o755)
    return path


def start(home: dict, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(NEMOTRON), *args], env=home["env"], cwd=home["tmp"], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            start_new_session=True)


def wait_for(proc: subprocess.Popen[str], ready, timeout: float = 300) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "never got there"
        time.sleep(0.1)


def stage_jobs(err: str) -> dict[str, str]:
    return dict(re.findall(r"^\[pipe \d+/\d+\] (\S+): job (\d+)$", err, re.M))


def queued(ids) -> set[str]:  # noqa: ANN001
    out = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True).stdout
    return set(out.split()) & set(ids)


def settle(ids, timeout: float = 60) -> set[str]:  # noqa: ANN001
    """The jobs of ``ids`` still in the queue once cancellations took effect."""
    deadline = time.monotonic() + timeout
    while (left := queued(ids)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: signal.Signals(s).name)
def test_batch_pipe_stopped_half_way_cancels_what_it_queued(home, slurm_cluster, sig):
    tar_slow_once_a_stage_is_queued(home)
    proc = start(home, "nano3", "pipe", "-c", "tiny", "--batch", "cluster")
    wait_for(proc, home["mark"].exists)
    os.kill(proc.pid, sig)
    out, err = proc.communicate(timeout=120)
    ids = stage_jobs(err)
    home["ids"] |= set(ids.values())
    assert proc.returncode == 128 + sig, err[-3000:]
    assert ids, err[-3000:]  # at least one stage was queued before the signal
    assert out == ""  # no chain line: nothing stays queued
    assert re.search(r"^\[pipe\] cancelled .*: the pipeline's submission was interrupted$", err, re.M), err[-2000:]
    assert settle(ids.values()) == set()
    assert {slurm_cluster.wait(i, timeout=120).state for i in ids.values()} == {"CANCELLED"}


def test_batch_pipe_killed_half_way_leaves_no_half_chain(home, slurm_cluster):
    tar_slow_once_a_stage_is_queued(home)
    proc = start(home, "nano3", "pipe", "-c", "tiny", "--stages", "prep-pretrain:sft", "--batch", "cluster")
    wait_for(proc, home["mark"].exists)
    os.kill(proc.pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    ids = stage_jobs(err)
    home["ids"] |= set(ids.values())
    assert ids, err[-3000:]
    assert {slurm_cluster.wait(i, timeout=120).state for i in ids.values()} == {"CANCELLED"}


def test_run_pipe_stopped_while_following_leaves_the_chain_and_says_how_to_reach_it(home):
    err_file = home["tmp"] / "run.err"
    with open(err_file, "w") as err_out:
        proc = subprocess.Popen([str(NEMOTRON), "nano3", "pipe", "-c", "tiny", "--stages", "prep-pretrain:pretrain",
                                 "--run", "cluster"], env=home["env"], cwd=home["tmp"], text=True,
                                stdout=subprocess.DEVNULL, stderr=err_out, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        wait_for(proc, lambda: re.search(r"^job \d+: (pending|running)", err_file.read_text(), re.M))
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=120)
    err = err_file.read_text()
    ids = stage_jobs(err)
    home["ids"] |= set(ids.values())
    assert proc.returncode == 143, err[-3000:]
    pipe_id = re.search(r"^pipe (\S+):", err, re.M).group(1)
    assert re.search(rf"stopped following pipe {pipe_id}; its stages stay in Slurm .*"
                     rf"nemotron jobs logs -f {pipe_id} follows them, nemotron jobs cancel {pipe_id}", err), err[-2000:]
    assert "[pipe] cancelled" not in err and "failed" not in err
    assert queued(ids.values())  # the chain was left alone

    ferr_file = home["tmp"] / "logs.err"
    with open(ferr_file, "w") as ferr_out:
        follow = subprocess.Popen([str(NEMOTRON), "jobs", "logs", "-f", pipe_id], env=home["env"], cwd=home["tmp"],
                                  stdout=subprocess.DEVNULL, stderr=ferr_out, stdin=subprocess.DEVNULL,
                                  start_new_session=True)
        wait_for(follow, lambda: "== " in ferr_file.read_text())
        time.sleep(1)
        os.kill(follow.pid, signal.SIGTERM)
        follow.wait(timeout=60)
    ferr = ferr_file.read_text()
    assert follow.returncode == 143, ferr
    assert re.search(r"stopped following job \d+; it keeps running", ferr), ferr
    assert "failed" not in ferr
