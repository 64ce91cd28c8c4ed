"""After an interrupted ``sbatch`` (slurm/sbatch.py): Slurm is asked for a job of ours that runs
the script, one found is cancelled, and one line says which it was. Real processes, and a real
held job on the local Slurm cluster."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from nemo_runspec.slurm.client import run_here
from nemo_runspec.slurm.sbatch import _own_pattern, queued_jobs, settle_stopped


def _sinfo_ok() -> bool:
    try:
        return subprocess.run(["sinfo", "-h"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def test_the_pkill_pattern_matches_the_script_and_not_the_shell_that_runs_it():
    # a path without regex characters, so that the plain path, as a pattern, would match the shell too
    folder = Path(tempfile.mkdtemp(prefix="sbatchtest"))
    script = folder / "sbatchjob"
    script.write_text("sleep 30\n")
    child = subprocess.Popen(["bash", str(script)])
    try:
        time.sleep(0.3)
        cmd = f"pgrep -f -- {shlex.quote(_own_pattern(str(script)))}; true"  # the shell stays while pgrep runs
        out = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True).stdout.split()
        assert out == [str(child.pid)]
    finally:
        child.kill()
        child.wait()
        shutil.rmtree(folder)
    assert _own_pattern("") == ""


def test_an_unanswered_squeue_is_none_and_said_so():
    assert queued_jobs(lambda cmd: (1, "", "slurm_load_jobs error"), script="/s.sh", job_name="n") is None

    def down(cmd):
        raise OSError("connection refused")

    assert queued_jobs(down, script="/s.sh", job_name=None) is None
    said: list[str] = []
    settle_stopped(KeyboardInterrupt(), script="/s.sh", job_name="n", run=down, local=True, say=said.append)
    assert said[0].startswith("interrupted while sbatch ran: stopped it, but Slurm could not be asked")


@pytest.mark.slurm
@pytest.mark.skipif(not _sinfo_ok(), reason="no Slurm cluster here (scripts/slurm-cluster.sh up)")
def test_a_job_sbatch_queued_before_the_interrupt_is_found_and_cancelled(tmp_path):
    script = tmp_path / "sbatch_held.sh"
    script.write_text("#!/bin/bash\ntrue\n")
    name = f"i31c-{uuid.uuid4().hex[:8]}"
    said: list[str] = []
    settle_stopped(KeyboardInterrupt(), script=str(script), job_name=name, run=run_here, local=True,
                   say=said.append)
    assert said == ["interrupted while sbatch ran: nothing was submitted"]
    job_id = subprocess.run(["sbatch", "--hold", "--parsable", "-J", name, "-o", os.devnull, str(script)],
                            capture_output=True, text=True, check=True).stdout.strip().split(";")[0]
    try:
        assert queued_jobs(run_here, script=str(script), job_name=name) == [job_id]
        exc = KeyboardInterrupt()
        settle_stopped(exc, script=str(script), job_name=name, run=run_here, local=True, say=said.append)
        assert said[-1] == f"interrupted while sbatch ran: Slurm had queued job {job_id} already; cancelled it"
        assert not hasattr(exc, "accepted_job_id")
        state = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True).stdout
        assert state.strip() in ("", "CANCELLED")
    finally:
        subprocess.run(["scancel", job_id], capture_output=True)
