"""Ctrl-C while nemo-run is finishing a submission Slurm already accepted: the
job's files stay (the queued job needs them) and the user is told its id."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from nemo_runspec.slurm import submission


def _job(tmp_path):
    from nemo_runspec.slurm.prepared import PreparedJob

    job = PreparedJob(name="demo", title="demo", exp_id="demo_1", base_dir=tmp_path, executor=NS(),
                      script="main.py", args=[], values={"executor": "slurm"}, mode="batch")
    return job


def _launch(job_id: str | None):
    class Launch:
        executor = NS()

        def __init__(self):
            self.job_id = None

        def launch(self, *, schedule=True):
            self.job_id = job_id  # sbatch returned (job id set) or not yet (None)
            raise KeyboardInterrupt

    return Launch()


@pytest.mark.parametrize("job_id", ["4242", None])
def test_interrupt_keeps_files_only_when_slurm_has_the_job(tmp_path, monkeypatch, capsys, job_id):
    job = _job(tmp_path)
    for name in ("place_secrets", "place_files"):
        monkeypatch.setattr(submission, name, lambda j: None)
    monkeypatch.setattr(submission, "launch_for", lambda j, b: _launch(job_id))
    monkeypatch.setattr("nemo_runspec.execution.tunnels.probe_tunnel", lambda v: None)
    with pytest.raises(KeyboardInterrupt):
        submission.submit_detached(job)
    if job_id:
        assert job.local_exp_dir.exists()
        assert not list(job.local_exp_dir.glob(f"{submission.SUBMITTING}.*"))
        assert "Slurm accepted job 4242" in capsys.readouterr().err
    else:
        assert not job.local_exp_dir.exists()


@pytest.mark.parametrize("earlier_interrupt", [False, True])
def test_a_failed_mkdir_on_the_cluster_says_what_failed_where(tmp_path, monkeypatch, earlier_interrupt):
    """Over SSH the job dir is made on the login node first; when that `mkdir` fails the
    error names the command, the host and the reason, never "Slurm rejected job".
    ``earlier_interrupt``: a Ctrl-C this (long-lived) process handled before the submission
    does not make the failure an interrupt."""
    import signal

    from nemo_runspec.runtime import signals

    monkeypatch.setattr(signals, "_RECEIVED", [signal.SIGINT] if earlier_interrupt else [])
    from invoke.exceptions import UnexpectedExit
    from invoke.runners import Result

    from nemo_runspec.errors import ExecutionError, SubmissionError
    from nemo_runspec.slurm.prepared import PreparedJob

    ran: list[str] = []

    class Session:  # the stand-in SSH connection: mkdir is refused, as on a read-only job_dir
        def run(self, cmd, **kw):
            ran.append(cmd)
            raise UnexpectedExit(Result(command=cmd, exited=1, stdout="",
                                        stderr="mkdir: cannot create directory '/shared/jobs': Permission denied\n"))

    class Tunnel:
        session = Session()

        def connect(self):
            pass

        def cleanup(self):
            pass

    monkeypatch.setattr("nemo_runspec.execution.tunnels.build_tunnel", lambda values, base_dir=None: Tunnel())
    monkeypatch.setattr("nemo_runspec.execution.tunnels.probe_tunnel", lambda v: None)
    job = PreparedJob(name="demo", title="demo", exp_id="demo_1", base_dir=tmp_path, executor=NS(),
                      script="main.py", args=[], values={"executor": "slurm", "tunnel": "ssh", "host": "login1",
                                                         "job_dir": "/shared/jobs"},
                      secrets={"HF_TOKEN": "hf_mkdirtestsecret0123456789abcdef"}, mode="batch")
    with pytest.raises(ExecutionError) as info:
        submission.submit_detached(job)
    err = info.value
    assert not isinstance(err, SubmissionError) and "Slurm rejected" not in str(err)
    text = str(err)
    assert ran and ran[0].startswith("mkdir -p -m 700 ") and "`mkdir -p -m 700 /shared/jobs/" in text, text
    assert "on login1" in text and "Permission denied" in text, text
    assert "job_dir" in (err.hint or "") and "login1" in (err.hint or ""), err.hint
    assert not job.local_exp_dir.exists()  # nothing left here either
