"""A stop signal at any moment of a submission, sent to the CLI alone, on the real cluster.

test_interrupts.py sends each signal to the CLI's whole process group, as a
terminal does, so a child (``sbatch``, ``tar``) dies with it. Here the signal goes
to the ``nemotron`` process only, as ``kill PID``, a scheduler or a supervisor
sends it: a child keeps running unless the CLI stops it. Through slow stand-ins
on PATH (they leave a mark and sleep, then run the real command):

- ``sbatch`` that has not reached Slurm yet: nothing is submitted, nothing is left,
  and the stand-in does not live on to submit later;
- ``sbatch`` that queued the job but has not answered: the job is found and cancelled;
- SIGKILL of the CLI during ``sbatch``: ``sbatch`` dies with it, and the half-made job
  dir with its 0600 secrets file is removed (by the CLI's watcher);
- ``tar`` during packaging (run through invoke, which used to swallow the interrupt,
  submit the job anyway and exit 0): nothing is submitted.

Whatever the signal, the exit status is 128 + signal and never 0.
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
SECRET = "anytimeSECRETvalue0123456789"
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
JOB_NAME = "nemotron-e2e-anytime"

RECIPE = '''\
# /// script
# [tool.runspec]
# name = "e2e/anytime"
#
# [tool.runspec.run]
# launch = "direct"
# ///
import time
print("started", flush=True)
time.sleep(60)
'''


@pytest.fixture
def sandbox(tmp_path: Path, slurm_cluster) -> dict:
    (tmp_path / "bin").mkdir()
    recipe_dir = tmp_path / "recipes"
    recipe_dir.mkdir()
    (recipe_dir / "anytime.py").write_text(RECIPE)
    (recipe_dir / "config").mkdir()
    (recipe_dir / "config" / "default.yaml").write_text("x: 1\n")
    subprocess.run(["git", "init", "-q", str(recipe_dir)], check=True)
    subprocess.run(["git", "-C", str(recipe_dir), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(recipe_dir), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"],
                   check=True)
    env = cli_env(tmp_path, slurm_cluster, f"""
        batch_partition = "{slurm_cluster.batch_partition}"
        packager = "code"
        env_vars = {{ HF_TOKEN = "{SECRET}" }}
    """, PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    return {"tmp": tmp_path, "env": env, "bin": tmp_path / "bin", "script": recipe_dir / "anytime.py",
            "home": tmp_path / "home", "mark": tmp_path / "mark"}


def slow(sb: dict, name: str, body: str) -> Path:
    """Put a stand-in ``name`` on the sandbox's PATH running ``body`` (``$REAL`` is the real one)."""
    real = shutil.which(name)
    assert real, name
    path = sb["bin"] / name
    path.write_text(f"#!/bin/sh\nREAL={real}\nMARK={sb['mark']}\n{body}\n")
    path.chmod(0o755)
    return path


def start(sb: dict) -> subprocess.Popen[str]:
    return subprocess.Popen([str(NEMOTRON), "run", str(sb["script"]), "--batch", "cluster"], env=sb["env"],
                            cwd=sb["tmp"], text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def signal_cli_at_mark(proc: subprocess.Popen[str], mark: Path, sig: int, timeout: float = 180) -> float:
    """Send ``sig`` to the CLI process alone once ``mark`` exists; return when it was sent."""
    deadline = time.monotonic() + timeout
    while not mark.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{mark} never appeared"
        time.sleep(0.05)
    os.kill(proc.pid, sig)
    return time.monotonic()


def our_jobs() -> set[str]:
    """Our jobs still in the queue that are not on their way out: a job just cancelled is
    shown COMPLETING while its node tears it down (sacct already says CANCELLED)."""
    out = subprocess.run(["squeue", "-h", "-n", JOB_NAME, "-o", "%i %T"], capture_output=True, text=True).stdout
    return {job for job, state in (line.split() for line in out.splitlines() if line.strip())
            if state not in ("COMPLETING", "CANCELLED", "COMPLETED", "FAILED", "TIMEOUT")}


def running(path: Path) -> list[str]:
    """Command lines of live processes that run ``path`` (a stand-in)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(path) in cmdline:
            found.append(cmdline)
    return found


def files_under(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file()] if path.exists() else []


def assert_nothing_left(sb: dict, before: set[str]) -> None:
    assert files_under(sb["home"] / "jobs" / "experiments") == []
    assert [p for p in files_under(sb["home"]) if SECRET.encode() in p.read_bytes()] == []
    assert our_jobs() <= before


@pytest.fixture(autouse=True)
def no_job_left_behind():
    before = our_jobs()
    yield
    for job in our_jobs() - before:
        subprocess.run(["scancel", job], capture_output=True)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_sbatch_not_yet_at_slurm_is_stopped_and_nothing_is_submitted(sandbox, sig):
    stand_in = slow(sandbox, "sbatch", 'touch "$MARK"; sleep 30; exec "$REAL" "$@"')
    before = our_jobs()
    proc = start(sandbox)
    sent = signal_cli_at_mark(proc, sandbox["mark"], sig)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - sent < 15, "the CLI waited for sbatch"  # it sleeps 30 s
    assert proc.returncode == 128 + sig, err
    assert "interrupted while sbatch ran: nothing was submitted" in err
    assert "Traceback" not in err and out == ""
    assert running(stand_in) == []  # no sbatch left to submit after the CLI is gone
    assert_nothing_left(sandbox, before)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: signal.Signals(s).name)
def test_sbatch_that_queued_the_job_but_did_not_answer_gets_the_job_cancelled(sandbox, slurm_cluster, sig):
    slow(sandbox, "sbatch", 'id=$("$REAL" "$@") || exit $?; touch "$MARK"; sleep 30; echo "$id"')
    before = our_jobs()
    proc = start(sandbox)
    signal_cli_at_mark(proc, sandbox["mark"], sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    match = re.search(r"Slurm had queued job (\d+) already; cancelled it", err)
    assert match, err
    assert slurm_cluster.wait(match.group(1), timeout=60).state == "CANCELLED"
    assert_nothing_left(sandbox, before)


def test_sigkill_during_sbatch_kills_sbatch_and_removes_the_half_made_job_dir(sandbox):
    stand_in = slow(sandbox, "sbatch", 'touch "$MARK"; sleep 30; exec "$REAL" "$@"')
    before = our_jobs()
    proc = start(sandbox)
    signal_cli_at_mark(proc, sandbox["mark"], signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 10
    while (running(stand_in) or files_under(sandbox["home"] / "jobs" / "experiments")) \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    assert running(stand_in) == []
    assert_nothing_left(sandbox, before)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_interrupt_while_packaging_runs_tar_submits_nothing(sandbox, sig):
    """nemo-run extracts the archive with ``tar`` through invoke, which forwarded Ctrl-C as
    ``\\x03`` and waited on: the interrupt was lost, the job submitted and the exit 0."""
    stand_in = slow(sandbox, "tar", 'touch "$MARK"; sleep 20; exec "$REAL" "$@"')
    before = our_jobs()
    proc = start(sandbox)
    sent = signal_cli_at_mark(proc, sandbox["mark"], sig)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - sent < 15, "the CLI waited for tar"
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err and out == ""
    assert running(stand_in) == []
    assert_nothing_left(sandbox, before)
