"""Submission over an SSH tunnel to the local sshd (127.0.0.1:2222, key auth)."""

from __future__ import annotations

import sys
import time

import pytest

from nemo_runspec.errors import ExecutionError

from .helpers import Out, profile, runspec, write_script

pytestmark = [pytest.mark.slurm, pytest.mark.ssh]

import nemo_run as run  # noqa: E402 - a required dependency: a broken install fails, never skips

from nemo_runspec.slurm import prepare_job, submit  # noqa: E402


@pytest.fixture(autouse=True)
def _cluster(slurm_cluster, ssh_target):
    return ssh_target


def _ssh_profile(tmp_path, ssh_target, **over):
    return profile(tunnel="ssh", host=ssh_target.host, port=ssh_target.port, user=ssh_target.user,
                   identity=str(ssh_target.identity),
                   remote_job_dir=str(tmp_path / "remote")) | over


def _job(tmp_path, script, prof, **kw):
    job = prepare_job(env=prof, mode="run", runspec=runspec(name="e2e/ssh"),
                      packager=run.Packager(), script=str(script),
                      base_dir=tmp_path / "local", **kw)
    job.entrypoint = sys.executable
    return job


def test_ssh_submission_completes(tmp_path, ssh_target):
    script = write_script(tmp_path, "import os; print('via ssh', os.environ['SLURM_JOB_ID'])\n")
    value = "tok_ssh_secret_98765"
    job = _job(tmp_path, script, _ssh_profile(tmp_path, ssh_target), secrets={"API_TOKEN": value})
    out = Out()
    sub = submit(job, attached=True, out=out, poll=0.5)
    assert sub.exit_code == 0
    assert f"via ssh {sub.job_id}" in out.getvalue()
    assert sub.job_dir.startswith(str(tmp_path / "remote"))
    assert (tmp_path / "remote").exists()
    leaks = [p for p in tmp_path.rglob("*") if p.is_file() and value.encode() in p.read_bytes()]
    assert leaks == []


@pytest.mark.parametrize("bad", ["port", "key"])
def test_wrong_port_or_key_fails_fast_and_clearly(tmp_path, ssh_target, bad):
    if bad == "port":
        prof = _ssh_profile(tmp_path, ssh_target, port=1)
    else:
        wrong = tmp_path / "wrong_key"
        import subprocess

        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(wrong)],
                       check=True)
        prof = _ssh_profile(tmp_path, ssh_target, identity=str(wrong))
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
