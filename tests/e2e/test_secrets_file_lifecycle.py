"""The 0600 secrets file after a job that never ran (docs/execution.md, "Secrets"):
removed when Slurm rejects the submission, and when `--run` follows a job cancelled
while pending (the job never sourced it, so its EXIT trap cannot delete it)."""

from __future__ import annotations

import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from nemo_runspec.errors import SubmissionError

from .helpers import Out, profile, runspec, write_script

pytestmark = [pytest.mark.slurm]

import nemo_run as run  # noqa: E402 - a required dependency: a broken install fails, never skips

import nemo_runspec.slurm.submission as submission  # noqa: E402 - the module whose place_secrets is watched
from nemo_runspec.slurm import prepare_job, submit  # noqa: E402

SECRET = "hf_e2eLIFECYCLEsecret0123456789ab"


def _job(tmp_path: Path, name: str, **prof: object):
    script = write_script(tmp_path, "print('ran', flush=True)\n")
    job = prepare_job(env=profile(**prof), mode="run", runspec=runspec(name=name), packager=run.Packager(),
                      script=str(script), secrets={"HF_TOKEN": SECRET}, base_dir=tmp_path / "jobs")
    job.entrypoint = sys.executable
    return job


def _secret_files(root: Path) -> list[Path]:
    return list(root.rglob(".nemotron-secrets.env")) if root.exists() else []


def test_rejected_submission_leaves_no_secrets_file(tmp_path: Path, slurm_cluster, monkeypatch) -> None:
    job = _job(tmp_path, "e2e/rejected", partition="nosuchpart")
    placed: list[tuple[str, int, str]] = []

    def place_and_look(prepared) -> None:  # the real placement, then what it left on disk
        real_place(prepared)
        path = Path(prepared.secret_path)
        placed.append((str(path), stat.S_IMODE(path.stat().st_mode), path.read_text()))

    real_place = submission.place_secrets
    monkeypatch.setattr(submission, "place_secrets", place_and_look)
    with pytest.raises(SubmissionError, match="invalid partition"):
        submit(job, attached=False, out=Out())
    # control: the file was there, 0600 and holding the secret, before sbatch refused the job
    assert placed == [(job.secret_path, 0o600, f"HF_TOKEN={SECRET}\n")]
    assert _secret_files(tmp_path / "jobs") == []
    assert not Path(job.secret_path).exists()


def test_run_of_a_job_cancelled_while_pending_removes_the_secrets_file(tmp_path: Path, slurm_cluster) -> None:
    job = _job(tmp_path, "e2e/pendcancel", sbatch_options={"begin": "now+1hour"})
    seen: list[Path] = []

    def cancel_when_queued() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            ids = subprocess.run(["squeue", "-h", "-n", job.job_name, "-o", "%i"], capture_output=True,
                                 text=True).stdout.split()
            if ids:
                seen.extend(_secret_files(tmp_path / "jobs"))  # placed while the job waits
                subprocess.run(["scancel", *ids], check=False)
                return
            time.sleep(0.5)

    canceller = threading.Thread(target=cancel_when_queued, daemon=True)
    canceller.start()
    sub = submit(job, attached=True, out=Out(), poll=0.5)
    canceller.join(timeout=10)
    assert seen, "the job never showed up in the queue"
    assert sub.exit_code != 0
    assert _secret_files(tmp_path / "jobs") == []
