"""The submission ledger (nemo_runspec.slurm.ledger): what a line holds, concurrent
appends, no secrets, unreadable lines, and finding a job or pipe again."""

from __future__ import annotations

import json
import multiprocessing
import os
import stat
from pathlib import Path

import nemo_run as run  # noqa: E402 - a required dependency: a broken install fails, never skips
import pytest

from nemo_runspec.errors import CLIUsageError
from nemo_runspec.slurm import SubmittedJob, ledger, prepare_job  # noqa: E402
from nemo_runspec.slurm.ledger import Pipe, Submission
from nemo_runspec.spec.models import Runspec, RunspecResources, RunspecRun

SECRET = "hf_ledgerSECRETvalue0123456789abcd"
PROFILE_SECRET = "profile-password-value-42"


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def spec():
    return Runspec(name="demo/train", script_path=Path("main.py"), run=RunspecRun(launch="direct"),
                   resources=RunspecResources(nodes=1, gpus_per_node=0))


def submitted(tmp_path, job_id="101", *, exp="1", **prof) -> SubmittedJob:
    profile = {"executor": "slurm", "account": "acct", "partition": "debug", "container_image": ""} | prof
    job = prepare_job(env=profile, mode="batch", runspec=spec(), packager=run.Packager(), script="main.py",
                      secrets={"HF_TOKEN": SECRET}, base_dir=tmp_path / "base", exp_id=f"demo-train_{exp}")
    return SubmittedJob(job_id=job_id, job_dir=job.job_dir, name=job.name, prepared=job,
                        log_path=os.path.join(job.job_dir, f"log-{job.job_name}_{job_id}_0.out"),
                        sbatch_log_path=os.path.join(job.job_dir, f"sbatch_{job.job_name}_{job_id}.out"),
                        sbatch_path=job.sbatch_path)


def test_a_line_holds_what_jobs_needs(tmp_path, home):
    sub = submitted(tmp_path)
    sub.prepared.profile, sub.prepared.env_file = "dev", "/somewhere/env.toml"
    ledger.record_submission(sub)
    path = home / "jobs" / "submissions.jsonl"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    (line,) = path.read_text().splitlines()
    data = json.loads(line)
    assert data["v"] == 1 and data["job_id"] == "101" and data["name"] == "demo-train"
    assert data["recipe"] == "demo/train" and data["slurm_name"] == "nemotron-demo-train"
    assert (data["profile"], data["env_file"], data["tunnel"], data["executor"]) == \
        ("dev", "/somewhere/env.toml", "local", "slurm")
    assert data["job_dir"] == sub.job_dir and data["log_path"] == sub.log_path
    assert data["local_exp_dir"] == str(sub.prepared.local_exp_dir) and data["pipe"] is None
    assert data["submitted_at"].endswith("Z")
    (entry,) = ledger.load_submissions()
    assert entry.exp_id == "demo-train_1" and entry.tunnel_values() == {"tunnel": "local"}


def test_no_secret_is_written_even_where_a_path_holds_one(tmp_path, home):
    # (a credential-shaped value in a profile path is refused when the profile is read; the job's
    # dir is set below, past that check, so the ledger's own redaction is what is tested)
    sub = submitted(tmp_path, job_dir="/jobs/plain", tunnel="ssh", host="login", user="me", port=2222,
                    identity="~/.ssh/id", remote_job_dir=f"/remote/{PROFILE_SECRET}",
                    env_vars={"DB_PASSWORD": PROFILE_SECRET, "PLAIN": "ok"})
    # a path that happens to contain a secret value (the profile's and the job's)
    sub.job_dir = f"/remote/{PROFILE_SECRET}/x/{SECRET}"
    ledger.record_submission(sub, pipe="p1")
    text = (home / "jobs" / "submissions.jsonl").read_text()
    assert SECRET not in text and PROFILE_SECRET not in text
    assert "***REDACTED***" in text
    (entry,) = ledger.load_submissions()
    assert entry.pipe == "p1" and entry.tunnel == "ssh"
    assert dict(entry.ssh) == {"host": "login", "user": "me", "port": 2222, "identity": "~/.ssh/id"}
    values = entry.tunnel_values()
    assert values["tunnel"] == "ssh" and values["host"] == "login" and values["port"] == 2222


def _append_many(home: str, worker: int, count: int) -> None:
    import time

    os.environ["NEMOTRON_HOME"] = home
    real_write = os.write

    def slow_write(fd, data):  # short writes, as a full disk or a signal may cause
        time.sleep(0.0005)
        return real_write(fd, bytes(data[:700]))

    os.write = slow_write
    for i in range(count):
        # long lines (> PIPE_BUF): only the lock keeps them whole
        ledger.append_entry(Submission(job_id=f"{worker}-{i}", name="n", job_dir="/d/" + "x" * 9000,
                                       submitted_at="2025-01-01T00:00:00Z"))


def test_concurrent_appends_never_interleave(home):
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(str(home), w, 40)) for w in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    entries, bad = ledger.read_ledger()
    assert bad == 0
    assert sorted(e.job_id for e in entries) == sorted(f"{w}-{i}" for w in range(6) for i in range(40))


def test_unreadable_lines_are_skipped_and_counted(home):
    path = home / "jobs" / "submissions.jsonl"
    path.parent.mkdir(parents=True)
    good = json.dumps(Submission(job_id="7", name="a", job_dir="/j/7").to_json())
    path.write_bytes(b"\n".join([
        b"not json", good.encode(), b"[1, 2]", b'{"name": "no id"}', b"\xff\xfe binary",
        b'{"job_id": "8", "job_dir": "/j/8", "ssh": "wrong"}',
        good[: len(good) // 2].encode(),  # a line cut short by a crash, no newline after it
    ]))
    entries, bad = ledger.read_ledger()
    assert [e.job_id for e in entries] == ["7"] and bad == 6
    # the next writer starts a fresh line instead of gluing onto the cut one
    ledger.append_entry(Submission(job_id="9", name="b", job_dir="/j/9"))
    entries, bad = ledger.read_ledger()
    assert [e.job_id for e in entries] == ["7", "9"] and bad == 6


def test_same_job_twice_is_merged_later_fields_win(home):
    first = Submission(job_id="5", name="a", job_dir="/j/5", submitted_at="2025-01-01T00:00:00Z")
    ledger.append_entry(first)
    ledger.append_entry(Submission(job_id="5", name="a", job_dir="/j/5", pipe="p9",
                                   submitted_at="2025-01-01T00:00:09Z"))
    ledger.append_entry(Submission(job_id="5", name="a", job_dir="/other/5"))  # same id, other cluster/job
    entries = ledger.load_submissions()
    assert len(entries) == 2
    assert entries[0].pipe == "p9" and entries[0].submitted_at == "2025-01-01T00:00:00Z"


def test_record_submission_warns_but_never_raises(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    monkeypatch.setenv("NEMOTRON_HOME", str(blocker))
    ledger.record_submission(submitted(tmp_path, "77"))
    err = capsys.readouterr().err
    assert err.startswith("warning: job 77 was submitted but not recorded") and len(err.splitlines()) == 1


def test_submit_records_the_accepted_job(tmp_path, home, monkeypatch):
    from nemo_runspec.slurm import submission

    sub = submitted(tmp_path, "4242")
    monkeypatch.setattr(submission, "submit_detached", lambda job: sub)
    monkeypatch.setattr(submission, "print_submission", lambda s, c: None)
    assert submission.submit(sub.prepared, attached=False) is sub
    (entry,) = ledger.load_submissions()
    assert entry.job_id == "4242" and entry.recipe == "demo/train"


def _write_pipe(home: Path, pipe_id: str, stages: list[dict], **extra) -> None:
    d = home / "pipes"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{pipe_id}.json").write_text(json.dumps({"id": pipe_id, "created": "2025-01-02T00:00:00Z",
                                                    "profile": None, "env_file": None, "stages": stages,
                                                    **extra}))


def test_find_by_id_exp_id_name_and_pipe(home):
    for job_id, name, when in (("11", "nano3-pretrain", "01"), ("12", "nano3-pretrain", "02"),
                               ("13", "nano3-sft", "03")):
        ledger.append_entry(Submission(job_id=job_id, name=name, job_dir=f"/j/{job_id}",
                                       recipe=name.replace("-", "/", 1), slurm_name=f"nemotron-{name}",
                                       local_exp_dir=f"/x/{name}_{job_id}00",
                                       submitted_at=f"2025-01-01T00:00:{when}Z"))
    _write_pipe(home, "nano3-pipe-1", [
        {"name": "pretrain", "job_id": "13", "job_dir": "/j/13", "depends_on": [], "skipped": False},
        {"name": "rl", "job_id": "14", "job_dir": "/j/14", "depends_on": ["pretrain"], "skipped": False,
         "recipe": "nano3/rl", "log": "/j/14/log"},
        {"name": "prep", "job_id": None, "job_dir": None, "depends_on": [], "skipped": True},
    ])
    (home / "pipes" / "broken.json").write_text("{not json")
    assert ledger.find("12").job_id == "12"
    assert ledger.find("nano3-pretrain_1100").job_id == "11"
    assert ledger.find("nano3/sft").job_id == "13" and ledger.find("nemotron-nano3-sft").job_id == "13"
    pipe = ledger.find("nano3-pipe-1")
    assert isinstance(pipe, Pipe) and [s.name for s in pipe.stages] == ["pretrain", "rl", "prep"]
    assert pipe.stages[2].skipped and pipe.stages[2].job_id is None
    # a stage the ledger lacks is found through its pipe record
    rl = ledger.find("14")
    assert isinstance(rl, Submission) and rl.pipe == "nano3-pipe-1" and rl.log_path == "/j/14/log"
    assert [p.id for p in ledger.load_pipes()] == ["nano3-pipe-1"]

    with pytest.raises(CLIUsageError) as err:
        ledger.find("nano3-pretrain")
    msg = str(err.value)
    assert "matches 2 jobs" in msg and msg.index("12 (") < msg.index("11 (") and "give a job id" in msg
    assert "\n" not in msg
    with pytest.raises(CLIUsageError) as err:
        ledger.find("nano3-pretrian")
    assert "did you mean 'nano3-pretrain'" in str(err.value)
    with pytest.raises(CLIUsageError) as err:
        ledger.find("nano3-pipe-2")
    assert "did you mean 'nano3-pipe-1'" in str(err.value)


def test_find_in_an_empty_ledger_says_nothing_was_submitted(home):
    with pytest.raises(CLIUsageError, match="nothing was submitted from here yet"):
        ledger.find("3")


def test_ssh_tunnel_without_recorded_host_comes_from_the_env_file(tmp_path):
    env = tmp_path / "env.toml"
    env.write_text('[far]\nexecutor = "slurm"\naccount = "a"\npartition = "p"\ntunnel = "ssh"\n'
                   'host = "login.far"\nuser = "me"\nport = 2200\nremote_job_dir = "/r"\n')
    sub = Submission(job_id="1", name="x", job_dir="/r/x", tunnel="ssh", profile="far", env_file=str(env))
    values = sub.tunnel_values()
    assert (values["host"], values["user"], values["port"], values["tunnel"]) == ("login.far", "me", 2200, "ssh")
    gone = Submission(job_id="1", name="x", job_dir="/r/x", tunnel="ssh", profile="far",
                      env_file=str(tmp_path / "moved.toml"))
    with pytest.raises(CLIUsageError, match=r"cannot reach job 1: its profile \[far\]"):
        gone.tunnel_values()


def test_prepare_job_records_recipe_profile_and_env_file(tmp_path, monkeypatch):
    from nemo_runspec.env import load_env_file, load_env_profile

    env = tmp_path / "env.toml"
    env.write_text('[dev]\nexecutor = "slurm"\naccount = "a"\npartition = "p"\ncontainer_image = ""\n')
    profile = load_env_profile("dev", load_env_file(env))
    job = prepare_job(env=profile, mode="batch", runspec=spec(), packager=run.Packager(), script="main.py",
                      base_dir=tmp_path / "b")
    assert (job.recipe, job.profile, job.env_file) == ("demo/train", "dev", str(env))
    plain = prepare_job(env={"executor": "slurm", "account": "a", "partition": "p", "container_image": ""},
                        mode="batch", runspec=spec(), packager=run.Packager(), script="main.py",
                        base_dir=tmp_path / "b")
    assert (plain.profile, plain.env_file) == (None, None)
