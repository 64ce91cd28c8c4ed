"""A sweep on this machine (sweep/here.py), through a recipe command: points one after another, a rerun running only the failed ones, and a dry run showing point 0 and the points table."""

from __future__ import annotations

import json

from tests.nemotron.cli.test_sweep_cli import _nemotron, _runs, _sandbox


def test_here_points_run_one_after_another_and_a_rerun_runs_only_the_failed(tmp_path):
    sb = _sandbox(tmp_path)
    proc = _nemotron(sb, "run", str(sb["script"]), "-m", "x=1,2,3")
    assert proc.returncode == 1, proc.stderr  # the failing point's exit code
    assert [r["x"] for r in _runs(sb)] == [1, 2, 3]  # the failure did not stop point 2
    sweep = _runs(sb)[0]["sweep"]
    assert sweep.startswith("team-sweepy-sweep-") and [r["index"] for r in _runs(sb)] == ["0", "1", "2"]
    assert f"[sweep {sweep}] point 1 failed (exit 1)" in proc.stderr
    record = json.loads((sb["tmp"] / "home" / "sweeps" / f"{sweep}.json").read_text())
    assert {k: v["exit_code"] for k, v in record["local"].items()} == {"0": 0, "1": 1, "2": 0}
    again = _nemotron(sb, "run", str(sb["script"]), "-m", "x=1,2,3")
    assert again.returncode == 1
    assert [r["x"] for r in _runs(sb)] == [1, 2, 3, 2]  # only the point that did not complete
    assert "2 of 3 points completed before; running 1 (1;" in again.stderr
    status = _nemotron(sb, "jobs", "status", sweep)
    assert status.returncode == 0, status.stderr
    assert "3 points: 2 COMPLETED, 1 FAILED" in status.stdout
    fresh = _nemotron(sb, "run", str(sb["script"]), "-m", "x=1,2,3", "--no-resume")
    assert [r["x"] for r in _runs(sb)][4:] == [1, 2, 3]
    assert fresh.returncode == 1


def test_a_dry_run_here_shows_point_0_and_the_table(tmp_path):
    sb = _sandbox(tmp_path)
    proc = _nemotron(sb, "run", str(sb["script"]), "-m", "-d", "x=range(1,4)")
    assert proc.returncode == 0, proc.stderr
    assert "POINT  OVERRIDES\n0      x=1\n1      x=2\n2      x=3" in proc.stdout
    assert _runs(sb) == []
    typo = _nemotron(sb, "run", str(sb["script"]), "-m", "-d", "y=1,2")
    assert typo.returncode == 2 and "unknown key 'y'" in typo.stderr
