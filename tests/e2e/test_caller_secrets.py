"""Secrets exported in the submitting shell never reach Slurm's state, the job
or any file: sbatch saves its whole environment in the controller's state dir
and hands it to the job, so we submit without them."""

from __future__ import annotations

import io
import os
import re
import secrets as pysecrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import Out, held_profile_env, profile, runspec, write_script

pytestmark = [pytest.mark.slurm]

import nemo_run as run  # noqa: E402 - a required dependency: a broken install fails, never skips

from nemo_runspec.slurm import prepare_job, submit  # noqa: E402
from tests.nemotron_cli import NEMOTRON  # noqa: E402


@pytest.fixture
def shell_secrets() -> dict[str, str]:
    """A token, a W&B key and a password, as a user's shell would export them."""
    return {
        "HF_TOKEN": "hf_" + pysecrets.token_hex(16),
        "WANDB_API_KEY": pysecrets.token_hex(20),
        "MY_SECRET_PASSWORD": "pw-" + pysecrets.token_hex(8),
    }


def _grep_tree(root: Path, values) -> list[str]:
    hits = []
    for p in root.rglob("*"):
        try:
            data = p.read_bytes() if p.is_file() else b""
        except OSError:
            continue
        hits += [f"{p}: {v[:6]}..." for v in values if v.encode() in data]
    return hits


def _slurm_views(job_id: str) -> str:
    """What `scontrol show job` and `sacct` show of the job. Both must succeed and show it:
    a failed or empty answer would pass every "no secret in it" check. slurmdbd learns of a
    new job a moment after slurmctld, so sacct is asked until it knows the job."""
    out = []
    for cmd in (["scontrol", "show", "job", "-dd", job_id],
                ["sacct", "-j", job_id, "-P", "-o", "JobID,JobName,SubmitLine,WorkDir,Comment"]):
        deadline = time.monotonic() + 60
        while True:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
            assert done.returncode == 0, f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr}"
            if job_id in done.stdout or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert job_id in done.stdout, f"{' '.join(cmd)} does not show job {job_id}: {done.stdout}"
        out.append(done.stdout)
    return "\n".join(out)


def _saved_environment(state_dir: Path, job_id: str) -> Path:
    found = list(state_dir.glob(f"**/job.{job_id}/environment"))
    assert found, f"no saved environment for job {job_id} under {state_dir}"
    return found[0]


def test_pending_batch_job_keeps_shell_secrets_out_of_slurm_state(tmp_path, slurm_cluster, shell_secrets):
    """nemotron kit preflight --batch on a profile whose job waits in the queue:
    while it is pending, the controller's saved environment holds the ordinary
    variables of the shell but none of its secrets."""
    env = held_profile_env(tmp_path, slurm_cluster, **shell_secrets, E2E_PLAIN_MARKER="visible-marker-42",
                           COLUMNS="200", TERM="dumb")
    nhome = Path(env["NEMOTRON_HOME"])
    proc = subprocess.run([str(NEMOTRON), "kit", "preflight", "--batch", "held"], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    job_id = re.search(r"\b(\d+)\b", re.search(r"job (?:id )?\d+|Submitted.*", proc.stdout + proc.stderr)
                       .group(0)).group(1)
    try:
        saved = _saved_environment(slurm_cluster.state_dir, job_id).read_bytes()
        assert b"E2E_PLAIN_MARKER=visible-marker-42" in saved  # the right file, read whole
        for name, value in shell_secrets.items():
            assert value.encode() not in saved, f"{name} in Slurm's saved environment"
            assert name.encode() + b"=" not in saved
        views = _slurm_views(job_id)
        assert job_id in views
        assert not [n for n, v in shell_secrets.items() if v in views]
        assert any(nhome.rglob("*")) and _grep_tree(nhome, shell_secrets.values()) == []
        assert not [n for n, v in shell_secrets.items() if v in proc.stdout + proc.stderr]
    finally:
        subprocess.run(["scancel", job_id], capture_output=True, timeout=30)


def test_job_does_not_see_shell_secrets_it_did_not_ask_for(tmp_path, monkeypatch, shell_secrets):
    """An attached job (W&B off) gets the shell's ordinary variables, not its secrets;
    the secrets it asked for still arrive through the 0600 file."""
    for name, value in shell_secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("E2E_PLAIN_MARKER", "visible-marker-43")
    script = write_script(tmp_path, """
        import os
        for name in ("HF_TOKEN", "WANDB_API_KEY", "MY_SECRET_PASSWORD", "E2E_PLAIN_MARKER", "ASKED_TOKEN"):
            print("SEEN", name, name in os.environ, flush=True)
    """)
    job = prepare_job(env=profile(), mode="run", runspec=runspec(name="e2e/shellsecrets"),
                      packager=run.Packager(), script=str(script), base_dir=tmp_path / "jobs",
                      secrets={"ASKED_TOKEN": "asked-" + pysecrets.token_hex(8)})
    job.entrypoint = sys.executable
    out = Out()
    sub = submit(job, attached=True, out=out, poll=0.5)
    assert sub.exit_code == 0, out.getvalue()
    text = out.getvalue()
    for name in shell_secrets:
        assert f"SEEN {name} False" in text
    assert "SEEN E2E_PLAIN_MARKER True" in text and "SEEN ASKED_TOKEN True" in text
    assert _grep_tree(tmp_path / "jobs", shell_secrets.values()) == []
    assert not [n for n, v in shell_secrets.items() if v in _slurm_views(sub.job_id)]
    # the caller's own environment is given back after submission
    assert all(os.environ[n] == v for n, v in shell_secrets.items())


def test_ray_job_does_not_see_shell_secrets(tmp_path, monkeypatch, slurm_cluster, shell_secrets):
    for name, value in shell_secrets.items():
        monkeypatch.setenv(name, value)
    script = tmp_path / "driver.py"
    script.write_text("import os\nprint('LEAKED', [n for n in ('HF_TOKEN', 'WANDB_API_KEY', "
                      "'MY_SECRET_PASSWORD') if n in os.environ], flush=True)\n")
    spec = runspec(name="e2e/rayshell", image=None, launch="ray", gpus_per_node=0)
    prof = {"executor": "slurm", "account": "testacct", "partition": "debug", "container_image": "",
            "gpus_per_node": 0, "time": "00:10:00", "nodes": 1, "cpus_per_task": 1, "ray_timeout": 240}
    job = prepare_job(env=prof, mode="batch", runspec=spec, packager=run.Packager(),
                      script=str(script), base_dir=tmp_path / "jobs")
    sub = submit(job, attached=True, out=io.StringIO(), poll=1.0)
    log = Path(sub.log_path).read_text()
    assert sub.exit_code == 0, log
    assert "LEAKED []" in log
    assert _grep_tree(tmp_path / "jobs", shell_secrets.values()) == []
