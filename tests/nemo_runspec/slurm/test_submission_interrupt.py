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


def _experiment(handle: str):
    class Experiment:
        jobs = [NS(handle=handle)]

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def add(self, *a, **k):
            pass

        def run(self, detach):
            raise KeyboardInterrupt  # after sbatch returned (handle set) or before (no handle)

    return Experiment()


@pytest.mark.parametrize("handle", ["slurm_tunnel://nemo_run/4242", ""])
def test_interrupt_keeps_files_only_when_slurm_has_the_job(tmp_path, monkeypatch, capsys, handle):
    job = _job(tmp_path)
    for name in ("place_secrets", "place_files"):
        monkeypatch.setattr(submission, name, lambda j: None)
    monkeypatch.setattr(submission, "experiment_for", lambda j, b: _experiment(handle))
    monkeypatch.setattr(submission, "task_for", lambda j: None)
    monkeypatch.setattr("nemo_runspec.execution.tunnels.probe_tunnel", lambda v: None)
    with pytest.raises(KeyboardInterrupt):
        submission.submit_detached(job)
    if handle:
        assert job.local_exp_dir.exists()
        assert not list(job.local_exp_dir.glob(f"{submission.SUBMITTING}.*"))
        assert "Slurm accepted job 4242" in capsys.readouterr().err
    else:
        assert not job.local_exp_dir.exists()
