"""A sweep's record (sweep/record.py): written and read back under $NEMOTRON_HOME/sweeps,
updated under a lock, and found by sweep id, array id and point."""

from __future__ import annotations

import json
import threading

import pytest

from nemo_runspec.errors import CLIUsageError
from nemo_runspec.sweep import record as r


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))


def _fresh(sweep_id="s1", created="2026-01-01T00:00:00Z"):
    return r.SweepRecord(id=sweep_id, created=created, recipe="t/train", profile="dgx", env_file=None,
                         points=[{"values": {"config": "tiny", "lr": "1e-3"}}, {"values": {"lr": "1e-4"}}])


def test_a_record_is_written_under_the_lock_and_read_back():
    with r.updating("s1", _fresh()) as rec:
        rec.arrays.append(r.ArrayRecord(job_id="168", indices=[0, 1], job_dir="/j", submitted_at=r.now()))
    again = r.load("s1")
    assert again.to_json() == rec.to_json() and again.path == r.record_path("s1")
    assert r.record_path("s1") == r.sweeps_dir() / "s1.json"
    assert json.loads(r.record_path("s1").read_text())["v"] == r.FORMAT


def test_concurrent_updates_all_land():
    with r.updating("s1", _fresh()):
        pass

    def bump(i):
        with r.updating("s1", _fresh()) as rec:
            rec.local[str(i)] = {"exit_code": 0}

    threads = [threading.Thread(target=bump, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.load("s1").local, key=int) == [str(i) for i in range(8)]


def test_an_update_that_raises_writes_nothing():
    with pytest.raises(RuntimeError), r.updating("s1", _fresh()) as rec:
        rec.local["0"] = {}
        raise RuntimeError("stop")
    assert r.load("s1") is None


def test_unreadable_or_odd_ids_load_as_none():
    r.sweeps_dir().mkdir(parents=True)
    (r.sweeps_dir() / "bad.json").write_text("[1]")
    assert r.load("bad") is None and r.load("../x") is None and r.load("") is None and r.load("nope") is None
    assert r.load_all() == []


def test_labels_and_the_newest_array_of_a_point():
    rec = _fresh()
    rec.arrays = [r.ArrayRecord("1", [0, 1], "", ""), r.ArrayRecord("2", [1], "", "")]
    assert rec.label(0) == "-c tiny lr=1e-3"
    assert rec.latest(1).job_id == "2" and rec.latest(0).job_id == "1" and rec.latest(5) is None


def test_resolve_by_sweep_id_array_id_and_point():
    old, new = _fresh("s1", "2026-01-01T00:00:00Z"), _fresh("s2", "2026-02-01T00:00:00Z")
    new.arrays = [r.ArrayRecord("168", [0, 1], "", "")]
    records = [old, new]
    assert r.resolve("s1", records) == (old, None)
    assert r.resolve("s2:1", records) == (new, 1)
    assert r.resolve("168", records) == (new, None)
    assert r.resolve("168_0", records) == (new, 0)
    assert r.resolve("999", records) is None
    with pytest.raises(CLIUsageError) as e:
        r.resolve("s2:7", records)
    assert "sweep s2 has no point '7'" in str(e.value) and "0..1" in str(e.value)


def test_from_json_refuses_what_is_not_a_record():
    for bad in ([], {"id": 3, "points": []}, {"id": "x"}):
        with pytest.raises(ValueError):
            r.SweepRecord.from_json(bad)
