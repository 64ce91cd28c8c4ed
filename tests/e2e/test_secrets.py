"""Secrets reach the job through a 0600 file and leave no trace on disk."""

from __future__ import annotations

import hashlib
import os
import secrets as pysecrets
import sys
from pathlib import Path

import pytest

from .helpers import Out, profile, runspec, write_script

pytestmark = [pytest.mark.slurm]


import nemo_run as run  # noqa: E402 - a required dependency: a broken install fails, never skips

from nemo_runspec.slurm import prepare_job, render_sbatch, submit  # noqa: E402


@pytest.fixture(autouse=True)
def _cluster(slurm_cluster):
    return slurm_cluster


def _all_bytes(root: Path) -> list[tuple[Path, bytes]]:
    return [(p, p.read_bytes()) for p in root.rglob("*") if p.is_file()]


def test_secret_seen_by_job_but_written_nowhere(tmp_path):
    value = "hf_" + pysecrets.token_hex(16)
    script = write_script(tmp_path, """
        import hashlib, os
        print("HASH", hashlib.sha256(os.environ["HF_TOKEN"].encode()).hexdigest(), flush=True)
    """)
    job = prepare_job(env=profile(), mode="run", runspec=runspec(name="e2e/secret"),
                      packager=run.Packager(), script=str(script), env_vars={"PLAIN": "v"},
                      secrets={"HF_TOKEN": value}, base_dir=tmp_path / "jobs")
    job.entrypoint = sys.executable
    rendered = render_sbatch(job)
    assert value not in rendered
    out = Out()
    sub = submit(job, attached=True, out=out, poll=0.5)
    assert sub.exit_code == 0
    expected = hashlib.sha256(value.encode()).hexdigest()
    assert f"HASH {expected}" in out.getvalue()
    assert f"HASH {expected}" in Path(sub.log_path).read_text()
    assert not Path(job.secret_path).exists()
    files = _all_bytes(tmp_path / "jobs")
    assert any(p.name.startswith("sbatch_") for p, _ in files)  # the logs were scanned
    leaks = [str(p) for p, data in files if value.encode() in data]
    assert leaks == []
    assert os.environ.get("HF_TOKEN") != value
