"""Following a job (slurm/jobs.py): a log follow stops at a job that can never start."""

from __future__ import annotations

from tests.nemo_runspec.slurm.test_queue_faults import Script, install, local_remote


def test_following_a_log_stops_at_a_job_that_can_never_start(tmp_path, monkeypatch):
    from nemo_runspec.slurm.jobs import follow_log

    install(monkeypatch, Script({"squeue -h": [(0, "PENDING|PartitionTimeLimit|\n", "")]}))
    final = follow_log(local_remote(), "9", str(tmp_path / "log"), lambda b: None, poll=0)
    assert final.state == "PENDING" and "can never start: Slurm says PartitionTimeLimit" in final.note
    assert "nemotron jobs cancel 9" in final.note
