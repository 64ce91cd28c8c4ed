"""What the rest of the e2e suite relies on: the local Slurm cluster and sshd behave like a real site."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import CLUSTER_SCRIPT, SlurmCluster, SSHTarget

pytestmark = [pytest.mark.slurm]


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/bash\n" + body)
    return path


def test_two_node_job_runs_one_task_per_node(slurm_cluster: SlurmCluster, tmp_path: Path):
    assert len(slurm_cluster.nodes) == 2
    out = tmp_path / "two-node.out"
    script = _script(tmp_path / "two.sh",
                     "srun bash -c 'echo task=$SLURM_PROCID node=$SLURMD_NODENAME'\n")
    job = slurm_cluster.sbatch("-N2", "--ntasks-per-node=1", "-J", "e2e-basics-2n",
                               f"--output={out}", str(script), cwd=tmp_path)
    result = slurm_cluster.wait(job)
    assert (result.state, result.exit_code) == ("COMPLETED", "0:0"), out.read_text()
    lines = [ln for ln in out.read_text().splitlines() if ln.startswith("task=")]
    assert len(lines) == 2, lines
    assert {ln.split("node=")[1] for ln in lines} == set(slurm_cluster.nodes)
    assert {ln.split()[0] for ln in lines} == {"task=0", "task=1"}


def test_sacct_reports_completed_and_failed_exit_codes(slurm_cluster: SlurmCluster,
                                                       tmp_path: Path):
    ok = slurm_cluster.sbatch("-J", "e2e-basics-ok", f"--output={tmp_path}/ok.out",
                              "--wrap", "true", cwd=tmp_path)
    bad = slurm_cluster.sbatch("-J", "e2e-basics-bad", f"--output={tmp_path}/bad.out",
                               "--wrap", "exit 3", cwd=tmp_path)
    ok_res, bad_res = slurm_cluster.wait(ok), slurm_cluster.wait(bad)
    assert (ok_res.state, ok_res.exit_code) == ("COMPLETED", "0:0")
    assert (bad_res.state, bad_res.exit_code) == ("FAILED", "3:0")


def test_unknown_partition_is_rejected_by_sbatch(slurm_cluster: SlurmCluster, tmp_path: Path):
    assert "nosuchpartition" not in slurm_cluster.partitions
    proc = subprocess.run(
        ["sbatch", "--parsable", f"--account={slurm_cluster.account}",
         "--partition=nosuchpartition", "--wrap", "true"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert proc.returncode != 0
    assert "invalid partition" in proc.stderr.lower(), proc.stderr
    assert proc.stdout.strip() == ""


def test_unknown_account_is_rejected_by_sbatch(slurm_cluster: SlurmCluster, tmp_path: Path):
    proc = subprocess.run(
        ["sbatch", "--parsable", "--account=nosuchaccount", "--wrap", "true"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert proc.returncode != 0
    assert "account" in proc.stderr.lower(), proc.stderr


def test_each_partition_accepts_jobs(slurm_cluster: SlurmCluster, tmp_path: Path):
    assert {slurm_cluster.run_partition, slurm_cluster.batch_partition} <= set(
        slurm_cluster.partitions)
    jobs = {p: slurm_cluster.sbatch(f"--partition={p}", f"--output={tmp_path}/{p}.out",
                                    "--wrap", "echo in=$SLURM_JOB_PARTITION", cwd=tmp_path)
            for p in {slurm_cluster.run_partition, slurm_cluster.batch_partition}}
    for part, job in jobs.items():
        assert slurm_cluster.wait(job).state == "COMPLETED"
        assert (tmp_path / f"{part}.out").read_text().strip() == f"in={part}"


def test_afterok_dependency_orders_jobs(slurm_cluster: SlurmCluster, tmp_path: Path):
    first = slurm_cluster.sbatch(
        "-J", "e2e-basics-dep1", f"--output={tmp_path}/1.out",
        "--wrap", f"sleep 3; date +%s.%N > {tmp_path}/first_end", cwd=tmp_path)
    second = slurm_cluster.sbatch(
        "-J", "e2e-basics-dep2", f"--dependency=afterok:{first}", f"--output={tmp_path}/2.out",
        "--wrap", f"date +%s.%N > {tmp_path}/second_start", cwd=tmp_path)
    assert slurm_cluster.wait(first).state == "COMPLETED"
    assert slurm_cluster.wait(second).state == "COMPLETED"
    first_end = float((tmp_path / "first_end").read_text())
    second_start = float((tmp_path / "second_start").read_text())
    assert second_start >= first_end


def test_afterok_on_failed_job_never_runs(slurm_cluster: SlurmCluster, tmp_path: Path):
    first = slurm_cluster.sbatch("-J", "e2e-basics-depfail", f"--output={tmp_path}/1.out",
                                 "--wrap", "exit 1", cwd=tmp_path)
    second = slurm_cluster.sbatch(
        "-J", "e2e-basics-depnever", f"--dependency=afterok:{first}",
        f"--output={tmp_path}/2.out", "--wrap", f"touch {tmp_path}/ran", cwd=tmp_path)
    try:
        assert slurm_cluster.wait(first).state == "FAILED"
        deadline, reason = time.monotonic() + 60, ""
        while time.monotonic() < deadline:
            reason = subprocess.run(["squeue", "-h", "-j", second, "-o", "%r"],
                                    capture_output=True, text=True, timeout=30).stdout.strip()
            if reason == "DependencyNeverSatisfied":
                break
            time.sleep(0.5)
        assert reason == "DependencyNeverSatisfied"
        assert not (tmp_path / "ran").exists()
    finally:
        subprocess.run(["scancel", second], timeout=30, check=False)


@pytest.mark.cluster_alone  # re-runs `up` on the cluster every other test uses
def test_up_is_idempotent_when_healthy(slurm_cluster: SlurmCluster):
    # The timeout is the hang guard; how fast a warm `up` is belongs to
    # bench/bench_cluster_up.py, not to a pass/fail test.
    proc = subprocess.run(["bash", str(CLUSTER_SCRIPT), "up"], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "starting" not in proc.stdout, proc.stdout  # nothing restarted


def test_status_fails_for_a_state_dir_without_daemons(tmp_path: Path, slurm_cluster: SlurmCluster):
    env = dict(os.environ, NEMOTRON_SLURM_STATE=str(tmp_path / "empty-state"))
    proc = subprocess.run(["bash", str(CLUSTER_SCRIPT), "status"], capture_output=True,
                          text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
    assert proc.returncode != 0
    assert "NOT RUNNING" in proc.stdout
    assert "NOT HEALTHY" in proc.stdout


@pytest.mark.ssh
def test_ssh_runs_sinfo_non_interactively(ssh_target: SSHTarget, slurm_cluster: SlurmCluster):
    proc = subprocess.run(ssh_target.ssh_command("sinfo", "-h", "-o", "%P"),
                          capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert tuple(p.rstrip("*") for p in proc.stdout.split()) == slurm_cluster.partitions


@pytest.mark.ssh
def test_sbatch_over_ssh_runs_the_job(ssh_target: SSHTarget, slurm_cluster: SlurmCluster,
                                      tmp_path: Path):
    out = tmp_path / "ssh.out"
    proc = subprocess.run(
        ssh_target.ssh_command("sbatch", "--parsable", f"--account={slurm_cluster.account}",
                               f"--output={out}", "--wrap", "'echo over-ssh'"),
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    job = proc.stdout.strip().split(";")[0]
    assert slurm_cluster.wait(job).state == "COMPLETED"
    assert out.read_text().strip() == "over-ssh"


@pytest.mark.ssh
def test_wrong_key_fails_fast_in_batch_mode(ssh_target: SSHTarget, tmp_path: Path):
    wrong = tmp_path / "wrong_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(wrong)],
                   check=True, timeout=30, stdin=subprocess.DEVNULL)
    start = time.monotonic()
    proc = subprocess.run(ssh_target.ssh_command("true", identity=wrong), capture_output=True,
                          text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 255
    assert "permission denied" in proc.stderr.lower(), proc.stderr
    assert time.monotonic() - start < 15
