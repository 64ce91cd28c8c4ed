"""Ctrl-C while following an attached (``--run``) job: the job keeps running (or is
cancelled), the user is told how to follow it; the command exits 130 after a
detach, 4 after a cancel.

Only Slurm itself is faked, at its boundary: ``Remote.run`` (where squeue, sacct and
scancel would run) raises KeyboardInterrupt for squeue, as SIGINT does mid-poll.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from nemo_runspec.slurm import monitor, submission
from nemo_runspec.slurm.prepared import PreparedJob, SubmittedJob
from nemo_runspec.slurm.remote import Remote


def _submitted(tmp_path: Path) -> SubmittedJob:
    prepared = PreparedJob(name="pretrain", title="pretrain", exp_id="pretrain_1", base_dir=tmp_path,
                           executor=None, script="train.py", args=[], values={"executor": "slurm"},
                           mode="run")
    return SubmittedJob(job_id="4242", job_dir=prepared.job_dir, name="pretrain", prepared=prepared,
                        log_path=str(tmp_path / "log.out"), sbatch_log_path=str(tmp_path / "sbatch.out"),
                        sbatch_path=prepared.sbatch_path)


@pytest.fixture
def slurm(monkeypatch) -> list[str]:
    """Slurm's command line, faked: squeue is interrupted by Ctrl-C; records every command."""
    ran: list[str] = []

    def run(self: Remote, cmd: str) -> tuple[int, str, str]:
        ran.append(cmd)
        if cmd.startswith("squeue"):
            raise KeyboardInterrupt
        return 0, "", ""

    monkeypatch.setattr(Remote, "run", run)
    return ran


def _console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=200, color_system=None), buf


def test_ctrl_c_without_a_terminal_detaches_and_exits_130(tmp_path, slurm, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO())  # not a TTY: no question asked
    sub = _submitted(tmp_path)
    console, buf = _console()
    assert monitor.follow(sub, console=console, poll=0) is None
    assert sub.interrupted and sub.exit_code is None
    assert sub.returncode == 130
    shown = buf.getvalue()
    assert "Detached from job 4242; it stays in Slurm (pending)." in shown
    assert "squeue -j 4242" in shown and "scancel 4242" in shown  # how to follow / cancel it
    assert not any(cmd.startswith("scancel") for cmd in slurm)  # the job was left alone


def test_ctrl_c_then_detach_exits_130(tmp_path, slurm):
    sub = _submitted(tmp_path)
    console, _ = _console()
    monitor.follow(sub, console=console, poll=0, on_interrupt=lambda s: "detach")
    assert sub.returncode == 130


def test_ctrl_c_then_cancel_cancels_removes_secrets_and_exits_4(tmp_path, slurm):
    """Cancel and detach end differently, so their exit codes differ (docs/cli.md):
    4 = cancelled, 130 = detached (the job stays). A cancelled job that never started
    never sourced its 0600 secrets file: the cancel removes it."""
    sub = _submitted(tmp_path)
    assert sub.prepared is not None
    sub.prepared.secrets = {"HF_TOKEN": "hf_zzzzzzzzzzzzzzzzzzzz"}
    secret = Path(sub.prepared.secret_path or "")
    secret.parent.mkdir(parents=True)
    secret.write_text("export HF_TOKEN=hf_zzzzzzzzzzzzzzzzzzzz\n")
    console, buf = _console()
    assert monitor.follow(sub, console=console, poll=0, on_interrupt=lambda s: "cancel") == 4
    assert "scancel 4242" in slurm
    assert sub.returncode == 4 != 130 and sub.state == "CANCELLED"
    assert "Cancelled job 4242" in buf.getvalue()
    assert not secret.exists()


def test_ctrl_c_then_cancel_that_scancel_refuses_detaches(tmp_path, monkeypatch):
    """scancel failed: the job may still run, so it keeps its secrets and the user is
    told how to follow or cancel it (exit 130, as a detach)."""
    def run(self: Remote, cmd: str) -> tuple[int, str, str]:
        if cmd.startswith("squeue"):
            raise KeyboardInterrupt
        return (1, "", "scancel: error: Kill job error on job id 4242: Access denied") if cmd.startswith(
            "scancel") else (0, "", "")

    monkeypatch.setattr(Remote, "run", run)
    sub = _submitted(tmp_path)
    console, buf = _console()
    assert monitor.follow(sub, console=console, poll=0, on_interrupt=lambda s: "cancel") is None
    assert sub.returncode == 130
    assert "Could not cancel job 4242: scancel: error: Kill job error" in buf.getvalue()
    assert "Detached from job 4242" in buf.getvalue()


def test_submit_attached_interrupted_returns_130(tmp_path, slurm, monkeypatch):
    """What ``nemotron ... --run`` returns: ``submit(...).returncode``."""
    sub = _submitted(tmp_path)
    monkeypatch.setattr(submission, "submit_detached", lambda job: sub)  # sbatch accepted it
    monkeypatch.setattr("sys.stdin", io.StringIO())
    console, buf = _console()
    assert sub.prepared is not None
    result = submission.submit(sub.prepared, attached=True, console=console, poll=0)
    assert result is sub and result.returncode == 130
    assert "Submitted Slurm job 4242" in buf.getvalue()
    assert "Detached from job 4242" in buf.getvalue()


def test_a_job_followed_to_its_end_or_not_followed_keeps_its_code(tmp_path):
    sub = _submitted(tmp_path)
    assert sub.returncode == 0  # --batch: submitted, not followed
    sub.exit_code = 3
    assert sub.returncode == 3
    sub.exit_code = 0
    assert sub.returncode == 0


def test_dry_run_tables_show_bracketed_values_whole(tmp_path):
    from nemo_runspec.cli.display import display_dry_run

    console, buf = _console()
    job = {"run": {"env": {"partition": "p", "note": "[d]etach [bold]x[/bold]"},
                   "env_sources": {"note": "env.toml:3 [dev]"}}}
    display_dry_run(job, {}, console=console)
    shown = buf.getvalue()
    assert "[d]etach [bold]x[/bold]" in shown and "env.toml:3 [dev]" in shown


@pytest.mark.parametrize(("sig", "code"), [(2, 130), (15, 143), (1, 129)], ids=["INT", "TERM", "HUP"])
def test_every_interrupt_that_detaches_exits_128_plus_its_signal(tmp_path, monkeypatch, sig, code):
    """The exit-code table (docs/cli.md): a detach is 128+signal, never 0 and never 4 (a cancel);
    only Ctrl-C asks, so SIGTERM/SIGHUP detach even on a terminal."""
    from nemo_runspec.runtime.signals import Interrupted

    def run(self: Remote, cmd: str) -> tuple[int, str, str]:
        if cmd.startswith("squeue"):
            raise Interrupted(sig) if sig != 2 else KeyboardInterrupt
        return 0, "", ""

    monkeypatch.setattr(Remote, "run", run)
    monkeypatch.setattr(monitor, "_ask_detach_or_cancel", lambda s: "cancel")  # a terminal answering c
    monkeypatch.setattr("sys.stdin", io.StringIO())
    sub = _submitted(tmp_path)
    console, buf = _console()
    result = monitor.follow(sub, console=console, poll=0)
    if sig == 2:  # Ctrl-C asked, and the answer was c
        assert result == 4 and sub.returncode == 4
    else:
        assert result is None and sub.returncode == code
        assert "Detached from job 4242" in buf.getvalue()
