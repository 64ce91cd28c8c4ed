"""Secrets reach the job through a 0600 file and leave no trace on disk."""

from __future__ import annotations

import hashlib
import io
import os
import secrets as pysecrets
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

pytestmark = [pytest.mark.slurm]


def write_script(dir_: Path, body: str, name: str = "job.py") -> Path:
    path = dir_ / name
    path.write_text(textwrap.dedent(body))
    return path


def runspec(name="e2e/job", launch="direct", nodes=1):
    return NS(name=name, image="nvcr.io/never/used:1", run=NS(launch=launch),
              resources=NS(nodes=nodes, gpus_per_node=8), env={})


def profile(**over):
    base = {"executor": "slurm", "account": "testacct", "partition": "debug",
            "container_image": "", "gpus_per_node": 0, "time": "00:05:00"}
    return base | over


class Out(io.StringIO):
    """Captures the streamed job log."""


run = pytest.importorskip("nemo_run")
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
