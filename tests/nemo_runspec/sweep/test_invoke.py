"""Sweep points as the record keeps them and as tables show them (sweep/invoke.py)."""

from __future__ import annotations

import json

from nemo_runspec.config.sweep import Point, SweepPlan
from nemo_runspec.sweep.invoke import emit, point_json, points_table

TOKEN = "hf_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7"

PLAN = SweepPlan(points=(
    Point(0, ("train.lr=1e-3",), {"train.lr": "1e-3"}),
    Point(1, ("train.lr=1e-4", "-c", "tiny"), {"train.lr": "1e-4", "config": "tiny"}, config="tiny"),
), keys=("train.lr",))


def test_the_table_has_a_row_per_point_and_aligned_extra_columns():
    assert points_table(PLAN) == "POINT  OVERRIDES\n0      train.lr=1e-3\n1      train.lr=1e-4 -c tiny"
    table = points_table(PLAN, indices={1}, extra={1: ["RUNNING"]}, header=("STATE",))
    assert table == "POINT  STATE    OVERRIDES\n1      RUNNING  train.lr=1e-4 -c tiny"


def test_a_point_is_kept_with_its_secrets_redacted():
    point = Point(2, (f"model.token={TOKEN}",), {"model.token": TOKEN})
    data = point_json(point)
    assert data["index"] == 2 and TOKEN not in json.dumps(data)
    assert data["overrides"][0].startswith("model.token=")


def test_emit_is_one_json_line(capsys):
    emit({"sweep": "s", "points": 2})
    assert capsys.readouterr().out == '{"sweep": "s", "points": 2}\n'
