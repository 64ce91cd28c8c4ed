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
