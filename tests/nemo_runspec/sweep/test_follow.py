"""Following a sweep to its end (sweep/follow.py): each point's state once as it changes, the
first failing point's exit code; on records of points run here (no cluster asked)."""

from __future__ import annotations

import pytest

from nemo_runspec.sweep import record as r
from nemo_runspec.sweep.follow import follow_sweep


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))


def _record(local):
    fresh = r.SweepRecord(id="s1", created=r.now(), recipe="t/train", profile=None, env_file=None,
                          points=[{}, {}, {}])
    with r.updating("s1", fresh) as rec:
        rec.local.update(local)


def test_every_point_ended_well_is_exit_0_with_one_line_per_point(capsys):
    _record({str(i): {"exit_code": 0, "at": r.now()} for i in range(3)})
    assert follow_sweep("s1", poll=0.01) == 0
    assert capsys.readouterr().err.splitlines() == [f"[sweep s1] point {i}: COMPLETED" for i in range(3)]


def test_the_first_failing_point_gives_its_exit_code(capsys):
    _record({"0": {"exit_code": 0, "at": r.now()}, "1": {"exit_code": 3, "at": r.now()},
             "2": {"exit_code": 5, "at": r.now()}})
    assert follow_sweep("s1", poll=0.01) == 3
    assert "[sweep s1] point 1: FAILED (exit 3)" in capsys.readouterr().err


def test_an_unknown_sweep_is_exit_1():
    assert follow_sweep("nope", poll=0.01) == 1
