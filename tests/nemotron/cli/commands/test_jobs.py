"""`nemotron jobs list|status|logs|cancel` on a ledger written here and stand-in Slurm
commands (tests/nemotron/cli/fake_slurm.py) reached through the local tunnel, as
the real ones are on a login node."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nemo_runspec.slurm import ledger
from nemo_runspec.slurm.ledger import Submission
from tests.import_probes import nemotron_heavy_imports
from tests.nemotron.cli.fake_slurm import FakeSlurm
from tests.nemotron_cli import NEMOTRON


@pytest.fixture
def slurm(tmp_path, monkeypatch) -> FakeSlurm:
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    fake = FakeSlurm(tmp_path)
    fake.home = tmp_path / "home"
    return fake


def record(job_id: str, recipe: str, second: int, *, job_dir: Path | None = None, **fields) -> Submission:
    name = recipe.replace("/", "-")
    job_dir = job_dir or Path(os.environ["NEMOTRON_HOME"]) / "jobs" / "experiments" / name / job_id / name
    entry = Submission(job_id=job_id, name=name, job_dir=str(job_dir), recipe=recipe, profile="dev",
                       env_file="/cfg/env.toml", slurm_name=f"nemotron-{name}",
                       log_path=str(job_dir / f"log-nemotron-{name}_{job_id}_0.out"),
                       sbatch_log_path=str(job_dir / f"sbatch_nemotron-{name}_{job_id}.out"),
                       local_exp_dir=str(job_dir.parent), submitted_at=f"2025-03-01T10:00:{second:02d}Z",
                       **fields)
    ledger.append_entry(entry)
    return entry


def jobs(slurm: FakeSlurm, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), "jobs", *args], capture_output=True, text=True, timeout=120,
                          env=slurm.env(NEMOTRON_HOME=str(slurm.home), **env), stdin=subprocess.DEVNULL)


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.strip().splitlines()[1:]]


def pipe_record(home: Path, pipe_id: str, stages: list[dict]) -> None:
    (home / "pipes").mkdir(parents=True, exist_ok=True)
    (home / "pipes" / f"{pipe_id}.json").write_text(json.dumps(
        {"id": pipe_id, "created": "2025-03-01T11:00:00Z", "profile": "dev", "env_file": None, "stages": stages}))


def test_list_newest_first_with_states_limit_and_filters(slurm):
    record("101", "nano3/pretrain", 1)
    record("102", "nano3/sft", 2)
    record("103", "nano3/pretrain", 3)
    record("104", "kit/preflight", 4)
    slurm.job("101", "COMPLETED")
    slurm.job("102", "FAILED", exit="3:0")
    slurm.job("103", "RUNNING", nodes="n1")
    slurm.job("104", "PENDING", reason="Priority", in_sacct=False)  # accounting has not seen it yet

    proc = jobs(slurm, "list")
    assert proc.returncode == 0, proc.stderr
    # one sacct for all, then squeue only for what sacct did not know
    assert [c.split(" -o")[0] for c in slurm.calls()] == ["sacct -n -P -X -j 104,103,102,101", "squeue -h -j 104"]
    assert proc.stdout.splitlines()[0].split() == ["JOB", "STATE", "RECIPE", "PROFILE", "SUBMITTED", "PIPE:STAGE"]
    got = [(r[0], r[1]) for r in rows(proc.stdout)]
    assert got == [("104", "PENDING"), ("103", "RUNNING"), ("102", "FAILED"), ("101", "COMPLETED")]
    assert "(3)" in rows(proc.stdout)[2]  # the failed job's exit code

    assert [r[0] for r in rows(jobs(slurm, "list", "-n", "2").stdout)] == ["104", "103"]
    assert [r[0] for r in rows(jobs(slurm, "list", "--recipe", "nano3/pretrain").stdout)] == ["103", "101"]
    assert [r[0] for r in rows(jobs(slurm, "list", "--recipe", "nano3").stdout)] == ["103", "102", "101"]
    assert [r[0] for r in rows(jobs(slurm, "list", "--state", "RUNNING").stdout)] == ["103"]
    assert [r[0] for r in rows(jobs(slurm, "list", "--state", "pd,failed").stdout)] == ["104", "102"]
    assert [r[0] for r in rows(jobs(slurm, "list", "--state", "R", "--recipe", "nano3/sft").stdout)] == []
    data = json.loads(jobs(slurm, "list", "--json", "-n", "1").stdout)
    assert data[0]["job_id"] == "104" and data[0]["state"] == "PENDING" and data[0]["reason"] == "Priority"


def test_list_filter_mistakes_are_one_line_errors(slurm):
    record("101", "nano3/pretrain", 1)
    slurm.job("101", "COMPLETED")
    for args, needle in ((["--state", "RUNING"], "did you mean 'RUNNING'"),
                         (["--recipe", "nano3/pretrian"], "did you mean 'nano3/pretrain'"),
                         (["-n", "x"], "-n must be a whole number")):
        proc = jobs(slurm, "list", *args)
        assert proc.returncode == 2, proc
        assert proc.stderr.startswith("error: ") and len(proc.stderr.strip().splitlines()) == 1
        assert needle in proc.stderr and "Traceback" not in proc.stderr


def test_empty_ledger_and_unreadable_lines(slurm):
    proc = jobs(slurm, "list")
    assert proc.returncode == 0 and "No jobs recorded yet" in proc.stderr
    record("101", "nano3/pretrain", 1)
    slurm.job("101", "COMPLETED")
    with open(slurm.home / "jobs" / "submissions.jsonl", "a") as f:
        f.write('{"broken": \n')
    proc = jobs(slurm, "list")
    assert proc.returncode == 0 and [r[0] for r in rows(proc.stdout)] == ["101"]
    assert "warning: skipped 1 unreadable line(s)" in proc.stderr


def test_status_of_a_job_by_id_and_name(slurm):
    sub = record("201", "nano3/sft", 1)
    slurm.job("201", "FAILED", exit="0:9", nodes="n[1-2]")
    proc = jobs(slurm, "status", "201")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("job 201 (nemotron-nano3-sft)")
    for needle in ("state:      FAILED", "exit code:  137 (sacct 0:9)", "nodes:      n[1-2]",
                   f"job dir:    {sub.job_dir}", f"log:        {sub.log_path}",
                   f"batch log:  {sub.sbatch_log_path}", "profile:    dev (/cfg/env.toml)", "cluster:    local"):
        assert needle in out, out
    assert jobs(slurm, "status", "nano3/sft").stdout == out
    data = json.loads(jobs(slurm, "status", "201", "--json").stdout)
    assert data["state"] == "FAILED" and data["exit_code"] == 137


def test_status_uses_squeue_without_accounting(slurm):
    record("301", "nano3/pretrain", 1)
    record("302", "nano3/pretrain", 2)
    slurm.job("301", "RUNNING", nodes="n2")
    slurm.job("302", "COMPLETED")
    slurm.no_sacct()
    proc = jobs(slurm, "status", "301")
    assert "state:      RUNNING" in proc.stdout and "nodes:      n2" in proc.stdout
    proc = jobs(slurm, "status", "302")
    assert proc.returncode == 0
    assert "state:      UNKNOWN (not in the queue any more, and there is no sacct" in proc.stdout
    assert "UNKNOWN?" in jobs(slurm, "list").stdout


def test_unknown_and_ambiguous_references(slurm):
    record("401", "nano3/pretrain", 1)
    record("402", "nano3/pretrain", 2)
    proc = jobs(slurm, "status", "nano3-pretrain")
    assert proc.returncode == 2 and "matches 2 jobs: 402 (nano3/pretrain" in proc.stderr
    proc = jobs(slurm, "cancel", "4011")
    assert proc.returncode == 2 and "no job or pipe '4011'" in proc.stderr and "did you mean '401'" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not any(c.startswith("scancel") for c in slurm.calls())


def test_logs_prints_the_log_or_says_it_is_not_there_yet(slurm):
    sub = record("501", "nano3/pretrain", 1)
    slurm.job("501", "PENDING", reason="Resources")
    proc = jobs(slurm, "logs", "501")
    assert proc.returncode == 0 and "job 501 is PENDING (Resources): no log yet" in proc.stderr
    Path(sub.log_path).parent.mkdir(parents=True)
    Path(sub.log_path).write_text("step 1 loss 3.2\nstep 2 loss 2.9\n")
    Path(sub.sbatch_log_path).write_text("+ srun ...\n")
    slurm.job("501", "COMPLETED")
    proc = jobs(slurm, "logs", "501")
    assert proc.returncode == 0 and proc.stdout == "step 1 loss 3.2\nstep 2 loss 2.9\n"
    assert jobs(slurm, "logs", "501", "--sbatch-log").stdout == "+ srun ...\n"
    Path(sub.log_path).unlink()
    proc = jobs(slurm, "logs", "501")
    assert proc.returncode == 1 and "left no log at" in proc.stderr and "--sbatch-log" in proc.stderr


@pytest.mark.parametrize("final,code", [(["COMPLETED", "0:0"], 0), (["FAILED", "4:0"], 4)])
def test_logs_follow_until_the_job_ends_and_exit_with_its_code(slurm, final, code):
    sub = record("601", "nano3/pretrain", 1)
    Path(sub.log_path).parent.mkdir(parents=True)
    Path(sub.log_path).write_text("started\n")
    slurm.job("601", "RUNNING", nodes="n1", polls=3, final=final, log=sub.log_path)
    proc = jobs(slurm, "logs", "-f", "601")
    assert proc.returncode == code, proc.stderr
    assert proc.stdout.startswith("started\n") and "tick 0" in proc.stdout
    assert "job 601: running on n1" in proc.stderr
    assert f"job 601: {final[0]} (exit code {code})" in proc.stderr


def test_logs_follow_waits_for_accounting_to_catch_up(slurm):
    sub = record("611", "nano3/pretrain", 1)
    Path(sub.log_path).parent.mkdir(parents=True)
    slurm.job("611", "RUNNING", polls=1, final=["FAILED", "2:0"], log=sub.log_path, sacct_lag=2)
    proc = jobs(slurm, "logs", "-f", "611")
    assert proc.returncode == 2 and "job 611: FAILED (exit code 2)" in proc.stderr


def test_logs_follow_without_accounting_cannot_tell_how_it_ended(slurm):
    sub = record("612", "nano3/pretrain", 1)
    Path(sub.log_path).parent.mkdir(parents=True)
    slurm.job("612", "RUNNING", polls=2, final=["COMPLETED", "0:0"], log=sub.log_path)
    slurm.no_sacct()
    proc = jobs(slurm, "logs", "-f", "612")
    assert proc.returncode == 1 and "tick 0" in proc.stdout
    assert "job 612: UNKNOWN: not in the queue any more, and there is no sacct" in proc.stderr
    assert len([c for c in slurm.calls() if c.startswith("sacct")]) == 1  # no waiting for what cannot come


def test_cancel_a_running_job_removes_its_secrets_file(slurm):
    sub = record("701", "nano3/pretrain", 1)
    Path(sub.job_dir).mkdir(parents=True)
    secrets = Path(sub.job_dir) / ".nemotron-secrets.env"
    secrets.write_text("HF_TOKEN=x\n")
    slurm.job("701", "PENDING", reason="BeginTime")
    proc = jobs(slurm, "cancel", "701", "--dry-run")
    assert proc.returncode == 0 and "would cancel job 701 (PENDING)" in proc.stdout
    assert not any(c.startswith("scancel") for c in slurm.calls()) and secrets.exists()
    proc = jobs(slurm, "cancel", "701")
    assert proc.returncode == 0 and "cancelled job 701 (was PENDING)" in proc.stdout
    assert "scancel 701" in slurm.calls() and slurm.read("701")["state"] == "CANCELLED"
    assert not secrets.exists()
    proc = jobs(slurm, "cancel", "701")
    assert proc.returncode == 0 and "job 701 already CANCELLED; nothing to cancel" in proc.stdout


def test_scancel_failure_is_one_line_exit_1(slurm):
    record("801", "nano3/pretrain", 1)
    slurm.job("801", "RUNNING")
    (slurm.bin / "scancel").write_text("#!/bin/sh\necho 'scancel: error: Access/permission denied' >&2\nexit 1\n")
    proc = jobs(slurm, "cancel", "801")
    assert proc.returncode == 1
    assert proc.stderr.strip() == "error: could not cancel job(s) 801: scancel: error: Access/permission denied"


def test_pipe_is_listed_together_and_status_cancel_act_on_its_stages(slurm):
    record("900", "kit/preflight", 1)
    pre = record("901", "nano3/pretrain", 2, pipe="nano3-pipe-a")
    sft = record("902", "nano3/sft", 3)  # recorded without its pipe id (the pipe record names it)
    record("903", "nano3/other", 4)
    job_dir = slurm.home / "jobs" / "remote" / "rl"
    pipe_record(slurm.home, "nano3-pipe-a", [
        {"name": "prep", "job_id": None, "job_dir": None, "depends_on": [], "skipped": True},
        {"name": "pretrain", "job_id": "901", "job_dir": None, "depends_on": ["prep"],
         "skipped": False},
        {"name": "sft", "job_id": "902", "job_dir": None, "depends_on": ["pretrain"], "skipped": False},
        # a stage the ledger lacks: known from the pipe record alone
        {"name": "rl", "job_id": "904", "job_dir": str(job_dir), "depends_on": ["sft"], "skipped": False,
         "recipe": "nano3/rl", "log": str(job_dir / "log.out")},
    ])
    slurm.job("900", "COMPLETED")
    slurm.job("901", "COMPLETED")
    slurm.job("902", "RUNNING", nodes="n1")
    slurm.job("903", "COMPLETED")
    slurm.job("904", "PENDING", reason="Dependency")

    proc = jobs(slurm, "list")
    assert proc.returncode == 0, proc.stderr
    got = [(r[0], r[-1]) for r in rows(proc.stdout)]
    # the pipe's rows together, in stage order, where its newest job is; then the rest
    assert got == [("-", "nano3-pipe-a:prep"), ("901", "nano3-pipe-a:pretrain"), ("902", "nano3-pipe-a:sft"),
                   ("904", "nano3-pipe-a:rl"), ("903", "-"), ("900", "-")]

    proc = jobs(slurm, "status", "nano3-pipe-a")
    assert proc.returncode == 0, proc.stderr
    table = {r[0]: r for r in rows(proc.stdout.split("\n", 1)[1])}
    assert table["prep"][2] == "SKIPPED" and table["pretrain"][2] == "COMPLETED"
    assert table["sft"][2] == "RUNNING" and table["rl"][2] == "PENDING" and table["rl"][4] == "sft"

    proc = jobs(slurm, "cancel", "nano3-pipe-a")
    assert proc.returncode == 0, proc.stderr
    assert "job 901 already COMPLETED; nothing to cancel" in proc.stdout
    assert "cancelled job 902 (was RUNNING)" in proc.stdout and "cancelled job 904 (was PENDING)" in proc.stdout
    assert [c for c in slurm.calls() if c.startswith("scancel")] == ["scancel 902 904"]
    assert slurm.read("901")["state"] == "COMPLETED" and slurm.read("904")["state"] == "CANCELLED"

    # a pipe's logs: each submitted stage's log in stage order, skipped stages named
    for job_id, log in (("901", pre.log_path), ("902", sft.log_path), ("904", str(job_dir / "log.out"))):
        Path(log).parent.mkdir(parents=True, exist_ok=True)
        Path(log).write_text(f"log of {job_id}\n")
    proc = jobs(slurm, "logs", "nano3-pipe-a")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "log of 901\nlog of 902\nlog of 904\n"
    headers = [ln for ln in proc.stderr.splitlines() if ln.startswith("== ")]
    assert headers == ["== prep: skipped", "== pretrain (job 901)", "== sft (job 902)", "== rl (job 904)"]


def test_jobs_help_and_local_listing_stay_light(slurm, tmp_path):
    for args in (["--help"], ["jobs", "--help"], ["jobs", "list", "--help"], ["jobs", "cancel", "-h"]):
        proc, heavy = nemotron_heavy_imports(args, tmp_path)
        assert "Usage" in proc.stdout and heavy == []
    record("101", "nano3/pretrain", 1)
    slurm.job("101", "COMPLETED")
    code = ("import sys, runpy\nsys.argv = ['nemotron', 'jobs', 'list']\n"
            "from nemotron.cli.bin.nemotron import main\nrc = 0\ntry:\n    main()\n"
            "except SystemExit as exc:\n    rc = exc.code or 0\nprint(f'RC={rc}', file=sys.stderr)\n"
            "print('HEAVY=' + ','.join(m for m in ('nemo_run', 'torch', 'ray', 'wandb', 'omegaconf') "
            "if m in sys.modules), file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=slurm.env(NEMOTRON_HOME=str(slurm.home)))
    assert "RC=0\n" in proc.stderr, proc.stderr
    assert "101" in proc.stdout
    assert "HEAVY=\n" in proc.stderr or proc.stderr.strip().endswith("HEAVY="), proc.stderr


def test_ssh_job_is_reached_through_its_tunnel_or_says_why_not(slurm, tmp_path):
    identity = tmp_path / "id_test"
    identity.write_text("not a key\n")
    record("950", "nano3/pretrain", 1, tunnel="ssh",
           ssh={"host": "127.0.0.1", "port": 1, "user": "nobody", "identity": str(identity)})
    record("951", "nano3/sft", 2)
    slurm.job("951", "RUNNING")
    slurm.job("950", "RUNNING")  # the local fakes must not answer for the remote job
    proc = jobs(slurm, "status", "950")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot connect to nobody@127.0.0.1:1"), lines
    # listing still shows the local jobs; the unreachable cluster's are marked as such
    proc = jobs(slurm, "list")
    assert proc.returncode == 0
    assert [(r[0], r[1]) for r in rows(proc.stdout)] == [("951", "RUNNING"), ("950", "UNREACHABLE")]
    assert "warning: cannot connect to nobody@127.0.0.1:1" in proc.stderr
    assert not any("950" in c for c in slurm.calls())


def test_remote_for_uses_the_recorded_tunnel(monkeypatch):
    from nemo_runspec.slurm import jobs as sj

    probed = []
    monkeypatch.setattr("nemo_runspec.execution.tunnels.probe_tunnel", probed.append)
    connected = []
    monkeypatch.setattr("nemo_run.SSHTunnel.connect", lambda self: connected.append((self.host, self.port)))
    sub = Submission(job_id="1", name="x", job_dir="/r/x", tunnel="ssh",
                     ssh={"host": "login", "user": "me", "port": 2222, "identity": "/k"})
    remote = sj.remote_for(sub)
    assert not remote.local and remote.values["host"] == "login" and remote.values["port"] == 2222
    assert probed and probed[0]["tunnel"] == "ssh" and connected == [("login", 2222)]
    assert sj.remote_for(Submission(job_id="2", name="y", job_dir="/j")).local
