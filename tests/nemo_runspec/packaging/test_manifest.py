"""The packaging plan (packaging/manifest.py) survives a JSON round trip, parts included."""

from __future__ import annotations

import json

from nemo_runspec.packaging.manifest import FileEntry, PackagingPlan


def test_plan_json_round_trip_with_parts(tmp_path):
    plan = PackagingPlan(
        kind="hybrid", files=[FileEntry("a/b.py", "00" * 32, 3, 0o644)],
        parts={"code": PackagingPlan(kind="git", commit="abc", dirty=False)},
    )
    path = plan.write_json(tmp_path / "packaging.json")
    data = json.loads(path.read_text())
    assert data["parts"]["code"]["commit"] == "abc" and data["files"][0]["path"] == "a/b.py"
    assert PackagingPlan.from_dict(data) == plan
