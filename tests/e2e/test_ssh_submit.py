"""Submission over an SSH tunnel to the local sshd (127.0.0.1:2222, key auth)."""

from __future__ import annotations

import io
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

from nemo_runspec.errors import ExecutionError

pytestmark = [pytest.mark.slurm, pytest.mark.ssh]

SSH_KEY = "/var/tmp/nemotron-slurm/ssh/id_ed25519"


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
from nemo_runspec.slurm import prepare_job, submit  # noqa: E402


@pytest.fixture(autouse=True)
def _cluster(slurm_cluster, ssh_target):
    return ssh_target


def _ssh_profile(tmp_path, **over):
    return profile(tunnel="ssh", host="127.0.0.1", port=2222, user="root", identity=SSH_KEY,
                   remote_job_dir=str(tmp_path / "remote")) | over


def _job(tmp_path, script, prof, **kw):
    job = prepare_job(env=prof, mode="run", runspec=runspec(name="e2e/ssh"),
                      packager=run.Packager(), script=str(script),
                      base_dir=tmp_path / "local", **kw)
    job.entrypoint = sys.executable
    return job


def test_ssh_submission_completes(tmp_path):
    script = write_script(tmp_path, "import os; print('via ssh', os.environ['SLURM_JOB_ID'])\n")
    value = "tok_ssh_secret_98765"
    job = _job(tmp_path, script, _ssh_profile(tmp_path), secrets={"API_TOKEN": value})
    out = Out()
    sub = submit(job, attached=True, out=out, poll=0.5)
    assert sub.exit_code == 0
    assert f"via ssh {sub.job_id}" in out.getvalue()
    assert sub.job_dir.startswith(str(tmp_path / "remote"))
    assert (tmp_path / "remote").exists()
    leaks = [p for p in tmp_path.rglob("*") if p.is_file() and value.encode() in p.read_bytes()]
    assert leaks == []


@pytest.mark.parametrize("bad", ["port", "key"])
def test_wrong_port_or_key_fails_fast_and_clearly(tmp_path, bad):
    if bad == "port":
        prof = _ssh_profile(tmp_path, port=1)
    else:
        wrong = tmp_path / "wrong_key"
        import subprocess

        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(wrong)],
                       check=True)
        prof = _ssh_profile(tmp_path, identity=str(wrong))
    script = write_script(tmp_path, "print('never')\n")
    job = _job(tmp_path, script, prof)
    t0 = time.monotonic()
    with pytest.raises(ExecutionError) as err:
        submit(job, attached=False)
    assert time.monotonic() - t0 < 15
    msg = str(err.value)
    assert "root@127.0.0.1" in msg and prof["identity"] in msg
    assert ("refused" in msg.lower()) if bad == "port" else ("permission denied" in msg.lower())
    assert not (tmp_path / "remote").exists()
