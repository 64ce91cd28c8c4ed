"""`nemotron nano3 pipe --batch` against stand-in Slurm commands on PATH (offline).

``sbatch`` hands out ids 101, 102, ... and records each job for the stand-in
``squeue``/``sacct``/``scancel`` (tests/nemotron/cli/fake_slurm.py); ``sinfo``
does not answer (no partition limits to check). Checked: stdout holds exactly
the chain's one JSON line; an interrupt once Slurm accepted a stage cancels the
whole chain and says so, and nothing on stdout claims a job that no longer exists.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.nemotron_cli import NEMOTRON

from .fake_slurm import FakeSlurm

ROOT = Path(__file__).resolve().parents[3]
SECRET = "pipeSubmitSECRETvalue0123456789"
STAGES = ["prep-pretrain", "pretrain"]

SBATCH = r'''
import json, os, signal, sys
from pathlib import Path
state = Path(os.environ["FAKE_SLURM_DIR"])
with open(state / "calls.log", "a") as f:
    f.write(" ".join(["sbatch", *sys.argv[1:]]) + "\n")
counter = state / "next_id"
n = int(counter.read_text()) if counter.exists() else 101
counter.write_text(str(n + 1))
(state / "jobs" / f"{n}.json").write_text(json.dumps({"state": "PENDING", "in_queue": True, "reason": "Priority",
                                                     "command": sys.argv[-1]}))
if str(n) == os.environ.get("FAKE_SBATCH_INTERRUPT_AT"):
    # Ctrl-C reaches the CLI's whole process group once Slurm has the job but before sbatch
    # answers (sbatch runs in a session of its own: find the CLI up the parent chain)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    pid = os.getppid()
    while pid > 1 and b"nemotron" not in Path(f"/proc/{pid}/cmdline").read_bytes():
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    os.killpg(os.getpgid(pid), signal.SIGINT)
    import time
    time.sleep(5)  # the CLI stops this sbatch before it answers
print(n)
'''


@pytest.fixture()
def slurm(tmp_path: Path) -> tuple[FakeSlurm, dict]:
    fake = FakeSlurm(tmp_path)
    sbatch = fake.bin / "sbatch"
    sbatch.write_text(f"#!{sys.executable}\n{SBATCH}")
    sbatch.chmod(0o755)
    sinfo = fake.bin / "sinfo"
    sinfo.write_text("#!/bin/sh\nexit 1\n")
    sinfo.chmod(0o755)
    env_toml = tmp_path / "env.toml"
    env_toml.write_text(textwrap.dedent(f"""
        [dev]
        executor = "slurm"
        account = "acct"
        partition = "batch"
        container_image = ""
        gpus_per_node = 0
        packager = "code"
        env_vars = {{ HF_TOKEN = "{SECRET}" }}
    """))
    nhome = tmp_path / "nhome"
    env = fake.env(NEMOTRON_HOME=str(nhome), NEMOTRON_ENV_FILE=str(env_toml), NEMORUN_HOME=str(nhome / "nemorun"),
                   NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "registry"), TERM="dumb")
    return fake, {"env": env, "cwd": tmp_path, "home": nhome}


def pipe(sb: dict, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), "nano3", "pipe", "-c", "tiny", "--batch", "dev", "--no-resume",
                           "--stages", ":".join(STAGES)], cwd=sb["cwd"], env={**sb["env"], **env}, text=True,
                          capture_output=True, timeout=300, stdin=subprocess.DEVNULL, start_new_session=True)


def test_batch_prints_one_json_line_for_the_chain(slurm):
    fake, sb = slurm
    proc = pipe(sb)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout
    chain = json.loads(lines[0])
    pipe_id = chain["pipe_id"]
    assert [s["stage"] for s in chain["stages"]] == STAGES
    assert [s["job_id"] for s in chain["stages"]] == ["101", "102"]
    assert chain["follow"] == f"nemotron jobs logs -f {pipe_id}"
    assert chain["cancel"] == f"nemotron jobs cancel {pipe_id}"
    assert all(Path(s["job_dir"]).is_dir() and s["cancel"] == f"nemotron jobs cancel {s['job_id']}"
               for s in chain["stages"])
    assert Path(chain["record"]).is_file()
    assert f"pipe {pipe_id}: prep-pretrain=101, pretrain=102" in proc.stderr  # the human summary
    assert SECRET not in proc.stdout + proc.stderr


def test_an_interrupt_after_slurm_accepted_a_stage_cancels_the_chain_and_says_only_that(slurm):
    """Ctrl-C once Slurm has the second stage but before sbatch answered: sbatch is stopped,
    102 is found in the queue (by its script) and cancelled, then 101; stdout does not hand a
    script the id of a cancelled job, and nothing says "it stays queued"."""
    fake, sb = slurm
    proc = pipe(sb, FAKE_SBATCH_INTERRUPT_AT="102")
    assert proc.returncode == 128 + signal.SIGINT, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert proc.stdout.strip() == "", proc.stdout
    assert "stays queued" not in proc.stderr and "may stay queued" not in proc.stderr, proc.stderr
    assert "interrupted while sbatch ran: Slurm had queued job 102 already; cancelled it" in proc.stderr
    assert "[pipe] cancelled 101: the pipeline's submission was interrupted" in proc.stderr, proc.stderr
    assert fake.read("101")["state"] == fake.read("102")["state"] == "CANCELLED"
    assert not list(sb["home"].rglob(".nemotron-secrets.env"))  # never started: nothing sourced them
    assert "Traceback" not in proc.stderr


def test_an_interrupt_whose_cancel_fails_says_what_stays_queued(slurm):
    """scancel refuses: the chain may still run, so stdout gets the chain's JSON line and
    stderr how to follow and cancel it."""
    fake, sb = slurm
    scancel = fake.bin / "scancel"
    scancel.write_text("#!/bin/sh\necho 'scancel: error: Unable to contact slurm controller' >&2\nexit 1\n")
    proc = pipe(sb, FAKE_SBATCH_INTERRUPT_AT="102")
    assert proc.returncode == 128 + signal.SIGINT, proc.stdout[-2000:] + proc.stderr[-3000:]
    chain = json.loads(proc.stdout.strip())
    assert [s["job_id"] for s in chain["stages"]] == ["101", "102"]
    assert "[pipe] cancelled" not in proc.stderr
    assert f"nemotron jobs cancel {chain['pipe_id']} cancels them" in proc.stderr, proc.stderr


def test_the_chain_record_of_a_chain_with_every_stage_skipped():
    """Nothing to submit: `pipe --batch` still prints this one JSON line (every job id null)."""
    from nemo_runspec import pipeline

    class Plan:  # the two fields chain_record reads of a skipped stage
        def __init__(self, name: str) -> None:
            self.name, self.reason = name, "skipped: output exists"

    record = pipeline.chain_record(pipeline.PipeSubmission("", [Plan(s) for s in STAGES]))  # type: ignore[misc]
    assert record["pipe_id"] is None and record["cancel"] is None
    assert [(s["stage"], s["job_id"]) for s in record["stages"]] == [(s, None) for s in STAGES]
    json.dumps(record)
