"""What Slurm last said about each job (slurm/last_seen.py), kept in $NEMOTRON_HOME for when
Slurm cannot be asked: written whole, bounded, unchanged sightings not rewritten, a broken
file ignored."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from nemo_runspec.slurm import last_seen


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(last_seen, "_WRITTEN", {})


def test_a_sighting_is_recalled_and_described():
    last_seen.remember("local", [{"job_id": "7", "state": "RUNNING", "nodes": "n1"},
                                 {"job_id": "8", "state": ""}])  # no state: nothing to remember
    entry = last_seen.recall("local", "7")
    assert entry["state"] == "RUNNING" and entry["nodes"] == "n1"
    assert last_seen.describe(entry) == f"RUNNING on n1 (seen {entry['seen']})"
    assert last_seen.recall("local", "8") is None and last_seen.recall("other", "7") is None
    assert last_seen.path() == last_seen.path().parent / "last-seen.json"
    assert last_seen.path().parent.name == "jobs" and not list(last_seen.path().parent.glob(".*.tmp"))


def test_describe_has_exit_code_or_reason():
    assert last_seen.describe(None) == "never seen"
    assert last_seen.describe({"state": "FAILED", "exit_code": 2, "seen": "t"}) == "FAILED (exit 2) (seen t)"
    assert last_seen.describe({"state": "PENDING", "reason": "Priority", "seen": "t"}) == "PENDING (Priority) (seen t)"


def test_an_unchanged_sighting_is_not_written_again():
    last_seen.remember("local", [{"job_id": "7", "state": "RUNNING"}])
    last_seen.path().write_text(json.dumps({"marker": {}}))
    last_seen.remember("local", [{"job_id": "7", "state": "RUNNING"}])
    assert json.loads(last_seen.path().read_text()) == {"marker": {}}
    last_seen.remember("local", [{"job_id": "7", "state": "COMPLETED", "exit_code": 0}])
    assert set(json.loads(last_seen.path().read_text())) == {"marker", "local:7"}


def test_the_file_keeps_the_most_recent_entries(monkeypatch):
    monkeypatch.setattr(last_seen, "KEEP", 2)
    old = {f"local:{i}": {"state": "COMPLETED", "seen": f"2000-01-01 00:00:0{i}"} for i in range(3)}
    last_seen.path().parent.mkdir(parents=True)
    last_seen.path().write_text(json.dumps(old))
    last_seen.remember("local", [{"job_id": "9", "state": "RUNNING"}])
    assert set(json.loads(last_seen.path().read_text())) == {"local:2", "local:9"}


def test_a_broken_file_is_ignored_and_replaced():
    last_seen.path().parent.mkdir(parents=True)
    last_seen.path().write_text("{not json")
    assert last_seen.recall("local", "7") is None
    last_seen.remember("local", [{"job_id": "7", "state": "RUNNING"}])
    assert last_seen.recall("local", "7")["state"] == "RUNNING"


def test_jobs_are_keyed_by_cluster():
    assert last_seen.cluster_name(SimpleNamespace(local=True)) == "local"
    assert last_seen.cluster_name(SimpleNamespace(local=False, values={"host": "login1"})) == "login1"
    assert last_seen.cluster_name(SimpleNamespace(local=False, values={})) == "ssh"
