"""SIGINT, SIGTERM and SIGHUP at every step of a submission, on the real cluster.

The CLI runs in its own session and the signal goes to its whole process group,
as a terminal's Ctrl-C (or a scheduler stopping a login-node script) does, so a
child such as ``sbatch`` gets it too. Each step is reached through a stand-in on
PATH that leaves a marker and waits before doing the real thing: ``git`` (before
submission: provenance and packaging), ``sbatch`` (the submission itself) and
``squeue`` (the queue wait). The log-follow step is a real running job.

Before Slurm has the job (sbatch included: it is stopped), an interrupt leaves
nothing: no job dir, no secrets file, no job. After, the job is kept and the
command prints how to follow and cancel it (and `nemotron jobs` knows it).
Either way the exit status is 128+N.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from tests.nemotron_cli import NEMOTRON

from .helpers import cli_env

pytestmark = [pytest.mark.slurm]

SECRET = "interruptSECRETvalue0123456789"
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]

RECIPE = '''\
# /// script
# [tool.runspec]
# name = "e2e/sleeper"
#
# [tool.runspec.run]
# launch = "direct"
# ///
import os, pathlib, sys, time
print("started", flush=True)
pathlib.Path(os.environ["SLEEPER_MARK"]).touch()
time.sleep(int(os.environ.get("SLEEPER_SECONDS", "60")))
'''


def stand_in(bin_dir: Path, name: str, mark: Path, wait: float = 3.0) -> None:
    """``name`` on PATH: leave ``mark``, wait, then run the real one."""
    real = shutil.which(name)
    assert real, name
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\ntouch {mark}\nsleep {wait}\nexec {real} \"$@\"\n")
    path.chmod(0o755)


def stand_in_once_secrets_exist(bin_dir: Path, name: str, mark: Path, home: Path, wait: float = 30.0) -> None:
    """``name`` on PATH: the real one, until the job's 0600 secrets file exists under
    ``home``; from then on (packaging after the secrets were placed) leave ``mark``
    (naming the file) and wait first."""
    real = shutil.which(name)
    assert real, name
    path = bin_dir / name
    path.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        found=$(find {home} -name .nemotron-secrets.env -print -quit 2>/dev/null)
        if [ -n "$found" ]; then echo "$found" > {mark}; sleep {wait}; fi
        exec {real} "$@"
    """))
    path.chmod(0o755)


@pytest.fixture
def sandbox(tmp_path: Path, slurm_cluster) -> dict:
    (tmp_path / "bin").mkdir()
    recipe_dir = tmp_path / "recipes"
    recipe_dir.mkdir()
    (recipe_dir / "sleeper.py").write_text(RECIPE)
    (recipe_dir / "config").mkdir()
    (recipe_dir / "config" / "default.yaml").write_text("x: 1\n")
    subprocess.run(["git", "init", "-q", str(recipe_dir)], check=True)
    subprocess.run(["git", "-C", str(recipe_dir), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(recipe_dir), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"],
                   check=True)
    env = cli_env(tmp_path, slurm_cluster, f"""
        batch_partition = "{slurm_cluster.default_partition}"
        packager = "code"
        env_vars = {{ HF_TOKEN = "{SECRET}", SLEEPER_MARK = "{tmp_path / 'running'}" }}
    """, PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    return {"tmp": tmp_path, "env": env, "bin": tmp_path / "bin", "script": recipe_dir / "sleeper.py",
            "home": tmp_path / "home"}


def start(sb: dict, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(NEMOTRON), "run", str(sb["script"]), mode, "cluster"], env=sb["env"],
                            cwd=sb["tmp"], text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def signal_when(proc: subprocess.Popen[str], mark: Path, sig: int, timeout: float = 120) -> tuple[str, str]:
    deadline = time.monotonic() + timeout
    while not mark.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{mark} never appeared"
        time.sleep(0.05)
    os.killpg(proc.pid, sig)
    return proc.communicate(timeout=120)


def our_jobs() -> list[str]:
    out = subprocess.run(["squeue", "-h", "-n", "nemotron-e2e-sleeper", "-o", "%i"], capture_output=True,
                         text=True).stdout
    return out.split()


def secrets_files(home: Path) -> list[Path]:
    return [p for p in home.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()] \
        if home.exists() else []


@pytest.fixture(autouse=True)
def no_job_left_behind():
    before = set(our_jobs())
    yield
    for job in set(our_jobs()) - before:
        subprocess.run(["scancel", job], capture_output=True)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_before_slurm_has_the_job_nothing_is_left(sandbox, sig):
    mark = sandbox["tmp"] / "git-called"
    stand_in(sandbox["bin"], "git", mark, wait=30)
    before = set(our_jobs())
    proc = start(sandbox, "--batch")
    out, err = signal_when(proc, mark, sig)
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err
    assert_nothing_left(sandbox, before)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_packaging_after_the_secrets_file_exists_removes_it(sandbox, sig):
    """The interrupt comes while packaging, once the 0600 secrets file is in the job dir:
    the file goes with everything else."""
    mark = sandbox["tmp"] / "git-called-with-secrets"
    stand_in_once_secrets_exist(sandbox["bin"], "git", mark, sandbox["home"])
    before = set(our_jobs())
    proc = start(sandbox, "--batch")
    out, err = signal_when(proc, mark, sig)
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err
    secret_file = Path(mark.read_text().strip())
    assert secret_file.name == ".nemotron-secrets.env"
    assert not secret_file.exists()
    assert_nothing_left(sandbox, before)


def assert_nothing_left(sandbox: dict, before: set[str]) -> None:
    """No file under the job root, no secrets file anywhere, no new job in Slurm."""
    jobs = sandbox["home"] / "jobs"
    assert not jobs.exists() or not [p for p in jobs.rglob("*") if p.is_file()], list(jobs.rglob("*"))
    assert secrets_files(sandbox["home"]) == []
    assert set(our_jobs()) <= before  # nothing new (an earlier test's job may still be leaving)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_during_sbatch_it_is_stopped_and_nothing_is_left(sandbox, sig):
    """sbatch runs in a session of its own (the group's signal does not reach it); the CLI
    stops it and asks Slurm whether it queued the job (test_interrupts_anytime.py: the
    signal to the CLI alone, and an sbatch that queued the job before it was stopped)."""
    mark = sandbox["tmp"] / "sbatch-called"
    stand_in(sandbox["bin"], "sbatch", mark, wait=10)
    before = set(our_jobs())
    proc = start(sandbox, "--batch")
    out, err = signal_when(proc, mark, sig)
    assert proc.returncode == 128 + sig, err
    assert "interrupted while sbatch ran: nothing was submitted" in err
    assert out == "" and "Traceback" not in err
    assert_nothing_left(sandbox, before)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_in_the_queue_wait_the_command_detaches(sandbox, sig):
    mark = sandbox["tmp"] / "squeue-called"
    stand_in(sandbox["bin"], "squeue", mark, wait=0)
    proc = start(sandbox, "--run")
    out, err = signal_when(proc, mark, sig)
    assert proc.returncode == 128 + sig, err
    job_id = re.search(r"Submitted Slurm job (\d+)", err).group(1)
    assert f"Detached from job {job_id}" in err and f"scancel {job_id}" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_while_following_the_log_the_job_keeps_running(sandbox, sig):
    proc = start(sandbox, "--run")
    out, err = signal_when(proc, sandbox["tmp"] / "running", sig)
    assert proc.returncode == 128 + sig, err
    job_id = re.search(r"Submitted Slurm job (\d+)", err).group(1)
    assert f"Detached from job {job_id}" in err
    assert job_id in our_jobs()  # still running: a signal to the CLI never cancels the job
    assert "Traceback" not in err


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_during_the_upload_over_ssh_nothing_is_left_here_or_there(sandbox, sig, ssh_target):
    remote = sandbox["tmp"] / "remote-jobs"
    with open(sandbox["env"]["NEMOTRON_ENV_FILE"], "a") as f:
        f.write(textwrap.dedent(f"""
            [cluster-ssh]
            extends = "cluster"
            tunnel = "ssh"
            host = "{ssh_target.host}"
            port = {ssh_target.port}
            user = "{ssh_target.user}"
            identity = "{ssh_target.identity}"
            remote_job_dir = "{remote}"
        """))
    mark = sandbox["tmp"] / "rsync-called"
    stand_in(sandbox["bin"], "rsync", mark, wait=30)
    before = set(our_jobs())
    proc = subprocess.Popen([str(NEMOTRON), "run", str(sandbox["script"]), "--batch", "cluster-ssh"],
                            env=sandbox["env"], cwd=sandbox["tmp"], text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
    out, err = signal_when(proc, mark, sig)
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err
    assert secrets_files(sandbox["home"]) == [] and secrets_files(remote) == []
    leftovers = [p for p in remote.rglob("*") if p.is_file()] if remote.exists() else []
    assert leftovers == [], leftovers  # the experiment dir on the cluster is gone too
    jobs = sandbox["home"] / "jobs"
    assert not jobs.exists() or not [p for p in jobs.rglob("*") if p.is_file()]
    assert set(our_jobs()) <= before  # nothing new (an earlier test's job may still be leaving)
