"""Faults on the submitting machine are reported as what they are, and leave nothing behind."""

from __future__ import annotations

import os
import subprocess
import textwrap

import pytest

from tests.nemotron_cli import NEMOTRON

pytestmark = [pytest.mark.slurm]



@pytest.fixture
def full_disk(tmp_path):
    """A 12 KiB tmpfs: room for directories and the sbatch script, not for the packaged code
    (the lean launch path writes no nemo-run bookkeeping files, so 48 KiB now fits a job)."""
    mnt = tmp_path / "full"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12k", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        if os.environ.get("CI") == "true":
            pytest.fail(f"cannot mount a tmpfs for the disk-full test: {proc.stderr.strip()}")
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_full_disk_while_packaging_is_not_called_a_slurm_rejection(tmp_path, slurm_cluster, full_disk):
    env_toml = tmp_path / "env.toml"
    env_toml.write_text(textwrap.dedent(f"""
        [c]
        executor = "slurm"
        account = "{slurm_cluster.account}"
        partition = "{slurm_cluster.default_partition}"
        container_image = ""
        gpus_per_node = 0
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(full_disk), NEMOTRON_ENV_FILE=str(env_toml), COLUMNS="300",
               NEMORUN_HOME=str(tmp_path / "nemorun"))
    proc = subprocess.run([str(NEMOTRON), "kit", "preflight", "--batch", "c"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert "Slurm rejected" not in errors[0]
    assert "No space left on device" in errors[0] and "before submission" in errors[0]
    assert "Traceback" not in proc.stderr
    # the experiment dir of the failed submission is gone
    assert not [p for p in full_disk.glob("jobs/experiments/*/*") if p.is_dir()]
