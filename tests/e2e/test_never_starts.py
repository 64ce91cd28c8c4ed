"""A job the cluster can never run, on the real two-node cluster: refused before
submission when sinfo can tell, and the pending reason Slurm gives otherwise is
one the monitor knows never resolves."""

from __future__ import annotations

import subprocess
import time

import pytest

from nemo_runspec.slurm.queue import NEVER_STARTS
from tests.nemotron_cli import NEMOTRON

from .helpers import cli_env

# the first test checks that the whole queue gained no job
pytestmark = [pytest.mark.slurm, pytest.mark.cluster_alone]



def test_more_nodes_than_the_partition_has_is_refused_before_submission(tmp_path, slurm_cluster):
    env = cli_env(tmp_path, slurm_cluster, f"nodes = {len(slurm_cluster.nodes) + 1}\n")
    before = set(subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True).stdout.split())
    proc = subprocess.run([str(NEMOTRON), "nano3", "data", "prep", "pretrain", "-c", "tiny", "--run", "cluster"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"asks for nodes={len(slurm_cluster.nodes) + 1} but partition" in errors[0]
    after = set(subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True).stdout.split())
    assert after <= before  # nothing submitted
    assert not list((tmp_path / "home").rglob("*_sbatch.sh"))  # nothing staged


def test_the_pending_reason_slurm_gives_is_one_the_monitor_knows(slurm_cluster):
    proc = subprocess.run(["sbatch", "--parsable", "-A", slurm_cluster.account, "-p", slurm_cluster.default_partition,
                           "-N", str(len(slurm_cluster.nodes) + 1), "--wrap", "true"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    job_id = proc.stdout.strip().split(";")[0]
    try:
        reason = ""
        for _ in range(40):
            reason = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%r"], capture_output=True,
                                    text=True).stdout.strip()
            if reason not in ("", "None", "Priority", "Resources"):
                break
            time.sleep(0.25)
        assert reason in NEVER_STARTS, reason
    finally:
        subprocess.run(["scancel", job_id], capture_output=True)
