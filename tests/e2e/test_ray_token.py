"""The per-job Ray auth token (docs/ray.md, "Security"): made at run time, never in the
sbatch script, the job's logs or any file of the job dir."""

from __future__ import annotations

import io
import re
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slurm]

import nemo_run as run  # noqa: E402 - a required dependency: a broken install fails, never skips

from nemo_runspec.slurm import prepare_job, render_sbatch, submit  # noqa: E402

from .helpers import runspec  # noqa: E402

DRIVER = textwrap.dedent("""
    import os, pathlib, sys
    import ray

    ray.init()
    print("RAY_UP", len([n for n in ray.nodes() if n["Alive"]]), flush=True)
    pathlib.Path(sys.argv[1]).write_text(os.environ.get("RAY_AUTH_TOKEN", ""))
    print("AUTH_MODE", os.environ.get("RAY_AUTH_MODE"), flush=True)
""")


def _files_under(path: Path) -> str:
    return "\n".join(p.read_bytes().decode(errors="replace") for p in path.rglob("*")
                     if p.is_file() and not p.is_symlink() and p.stat().st_size < 20_000_000)


def test_ray_token_is_made_at_run_time_and_written_nowhere(tmp_path: Path, slurm_cluster) -> None:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    seen = tmp_path / "seen-token"  # outside the job dir: the driver's own report
    prof = {"executor": "slurm", "account": slurm_cluster.account, "partition": slurm_cluster.default_partition,
            "container_image": "", "gpus_per_node": 0, "time": "00:10:00", "nodes": 1,
            "cpus_per_task": 1, "ray_timeout": 240}
    job = prepare_job(env=prof, mode="batch", runspec=runspec(name="e2e/raytoken", image=None, launch="ray", gpus_per_node=0), packager=run.Packager(),
                      script=str(script), args=[str(seen)], base_dir=tmp_path / "jobs",
                      exp_id="e2e-raytoken_fixed")
    rendered = render_sbatch(job)
    sub = submit(job, attached=True, out=io.StringIO(), poll=1.0)
    log = Path(sub.log_path).read_text()
    assert sub.exit_code == 0, log
    assert "RAY_UP 1" in log and "AUTH_MODE token" in log
    token = seen.read_text()
    assert re.fullmatch(r"[0-9a-f]{64}", token), token
    assert token not in rendered and token not in Path(sub.sbatch_path).read_text()
    assert token not in _files_under(tmp_path / "jobs")       # logs, ray logs, job files
    assert token not in _files_under(Path(job.ray_log_dir))
