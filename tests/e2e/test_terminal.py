"""The attached run at a real (pseudo-)terminal: what Ctrl-C asks, and what each answer does."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.nemotron_cli import NEMOTRON

from .helpers import cli_env

pytestmark = [pytest.mark.slurm]



class Terminal:
    """``nemotron`` on a pseudo-terminal: read what it prints, type into it."""

    def __init__(self, argv: list[str], env: dict, cwd: Path) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # child: the terminal is its stdin/stdout/stderr
            os.chdir(cwd)
            os.execve(argv[0], argv, env)
        self.raw = ""

    @property
    def text(self) -> str:
        """What the terminal shows, colours removed."""
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", self.raw)

    def read_until(self, pattern: str, timeout: float = 120) -> re.Match:
        deadline = time.time() + timeout
        while time.time() < deadline:
            match = re.search(pattern, self.text)
            if match:
                return match
            ready, _, _ = select.select([self.fd], [], [], 0.5)
            if ready:
                try:
                    self.raw += os.read(self.fd, 4096).decode(errors="replace")
                except OSError:
                    break
        raise AssertionError(f"{pattern!r} not seen; terminal shows:\n{self.text[-3000:]}")

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def wait(self, timeout: float = 60) -> int:
        deadline = time.time() + timeout
        while time.time() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                try:
                    while True:
                        ready, _, _ = select.select([self.fd], [], [], 0.2)
                        if not ready:
                            break
                        self.raw += os.read(self.fd, 4096).decode(errors="replace")
                except OSError:
                    pass
                return os.waitstatus_to_exitcode(status)
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if ready:
                try:
                    self.raw += os.read(self.fd, 4096).decode(errors="replace")
                except OSError:
                    pass
        os.kill(self.pid, signal.SIGKILL)
        raise AssertionError(f"nemotron did not exit; terminal shows:\n{self.text[-3000:]}")


@pytest.fixture
def held(tmp_path, slurm_cluster) -> dict:
    """A profile whose jobs wait in the queue for an hour (BeginTime), with a secret (so
    each job dir holds a 0600 secrets file until the job starts), on a colour terminal."""
    env = cli_env(tmp_path, slurm_cluster, 'sbatch_options = { begin = "now+1hour" }\n'
                  'env_vars = { HF_TOKEN = "hf_terminaltestsecret0123456789" }\n', name="held",
                  COLUMNS="160", TERM="xterm-256color")
    return {"env": env, "cwd": tmp_path}


def _sacct_state(job_id: str) -> str:
    for _ in range(30):
        out = subprocess.run(["sacct", "-j", job_id, "-X", "-n", "-P", "-o", "State"],
                             capture_output=True, text=True).stdout.strip()
        if out:
            return out.split()[0]
        time.sleep(1)
    return ""


@pytest.mark.parametrize("answer", ["c", "d"])
def test_ctrl_c_prompt_on_a_pending_job(held, answer):
    term = Terminal([str(NEMOTRON), "kit", "preflight", "--run", "held"], held["env"], held["cwd"])
    job_id = ""
    try:
        job_id = term.read_until(r"Submitted Slurm job (\d+)").group(1)
        term.read_until(rf"job {job_id}: pending \(BeginTime")
        secrets = list((held["cwd"] / "home").rglob(".nemotron-secrets.env"))
        assert len(secrets) == 1, secrets  # the pending job's secrets, not yet sourced
        term.type("\x03")  # Ctrl-C, through the terminal's line discipline
        term.read_until(r"\[d/c\]")
        prompt = term.text.splitlines()[-1]
        # Slurm's word (pending, and why), and the letters of [d]etach / [c]ancel intact
        assert f"Job {job_id} is pending (BeginTime): [d]etach or [c]ancel it?" in term.text, prompt
        term.type(answer + "\r")
        code = term.wait()
        # the exit code says what happened (docs/cli.md): 4 cancelled, 130 detached
        assert code == (4 if answer == "c" else 130)
        if answer == "c":
            assert f"Cancelled job {job_id}" in term.text
            assert _sacct_state(job_id) == "CANCELLED"
            assert not secrets[0].exists()  # the job never ran, so never removed it itself
        else:
            assert f"Detached from job {job_id}; it stays in Slurm (pending (BeginTime))." in term.text
            assert f"squeue -j {job_id}" in term.text and f"scancel {job_id}" in term.text
            assert _sacct_state(job_id) == "PENDING"
            assert secrets[0].exists()  # the job will still start and source it
    finally:
        if job_id:
            subprocess.run(["scancel", job_id], capture_output=True)
        try:
            os.kill(term.pid, signal.SIGKILL)
            os.waitpid(term.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
