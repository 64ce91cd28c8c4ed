"""Offline sbatch rendering (--dry-run) and tunnel probing, without a cluster."""

from __future__ import annotations

import os
import time
from pathlib import Path

import nemo_run as run  # noqa: E402 - a required dependency: a broken install fails, never skips

from nemo_runspec.slurm import prepare_job, render_sbatch  # noqa: E402
from nemo_runspec.spec.models import Runspec, RunspecResources, RunspecRun

SECRET = "hf_renderSecretValue0123456789"


def spec(launch="direct"):
    return Runspec(name="demo/render", script_path=Path("main.py"), run=RunspecRun(launch=launch),
                   resources=RunspecResources(nodes=2, gpus_per_node=0))


def _job(tmp_path, **prof):
    profile = {"executor": "slurm", "account": "testacct", "partition": "debug",
               "container_image": ""} | prof
    return prepare_job(env=profile, mode="batch", runspec=spec(), packager=run.Packager(),
                       script="main.py", args=["--n", "3"], env_vars={"PLAIN": "a b"},
                       secrets={"HF_TOKEN": SECRET}, startup_commands=["echo setup"],
                       base_dir=tmp_path / "base", exp_id="demo-render_fixed")


def test_render_is_offline_and_leaves_nothing(tmp_path):
    before = set(os.listdir(tmp_path))
    job = _job(tmp_path)
    text = render_sbatch(job)
    assert set(os.listdir(tmp_path)) == before  # no base dir, nothing written
    assert "#SBATCH --partition=debug" in text and "#SBATCH --nodes=2" in text
    assert f"--chdir {job.job_dir}/code" in text
    assert "python main.py --n 3" in text
    assert 'export PLAIN="a b"' in text
    assert SECRET not in text and job.secret_path in text
    assert text == render_sbatch(job)  # deterministic for a fixed exp id


def test_render_ssh_profile_never_connects(tmp_path):
    # 10.255.255.1 is unroutable: any connection attempt would hang for seconds.
    job = _job(tmp_path, tunnel="ssh", host="10.255.255.1", user="u", port=22,
               remote_job_dir="/remote/jobs")
    t0 = time.monotonic()
    text = render_sbatch(job)
    assert time.monotonic() - t0 < 10
    assert "/remote/jobs/demo-render/demo-render_fixed/demo-render/" in text


