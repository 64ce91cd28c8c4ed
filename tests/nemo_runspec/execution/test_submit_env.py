"""The submission environment (execution/submit_env.py): a local run's launcher mark never reaches sbatch."""

from __future__ import annotations


def test_a_local_runs_launcher_mark_never_reaches_sbatch(monkeypatch):
    """A Slurm job submitted from inside a local run must not inherit that run's launcher
    mark: the job would refuse to publish once the local run ended."""
    import os as _os

    from nemo_runspec.execution.submit_env import submission_environment

    monkeypatch.setenv("NEMOTRON_LAUNCHER", "vm@123:456")
    monkeypatch.setenv("PLAIN_SETTING", "kept")
    with submission_environment([]):
        assert "NEMOTRON_LAUNCHER" not in _os.environ and _os.environ["PLAIN_SETTING"] == "kept"
    assert _os.environ["NEMOTRON_LAUNCHER"] == "vm@123:456"
