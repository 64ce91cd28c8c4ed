"""An artifact a sweep point publishes records the point (artifacts/registry.py)."""

from __future__ import annotations

import json

from nemo_runspec.artifacts.registry import ArtifactRegistry


def test_published_versions_record_the_sweep_point(tmp_path, monkeypatch):
    reg = ArtifactRegistry(tmp_path / "reg")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.setenv("NEMOTRON_SWEEP_ID", "t-sweep-1")
    for index, lr in ((0, "0.1"), (1, "0.2")):
        monkeypatch.setenv("NEMOTRON_SWEEP_INDEX", str(index))
        monkeypatch.setenv("NEMOTRON_SWEEP_VALUES", json.dumps(
            {"sweep": "t-sweep-1", "index": index, "values": {"lr": lr}, "overrides": [f"lr={lr}", "x=1"]}))
        reg.publish("model", tmp_path / "ab"[index], metadata={"kind": "m"})
    v1, v2 = reg.versions("model")
    assert (v1.version, v2.version) == (1, 2) and v1.path != v2.path
    assert v1.metadata["sweep"] == {"id": "t-sweep-1", "index": 0, "values": {"lr": "0.1"}, "overrides": ["lr=0.1", "x=1"]}
    assert v2.metadata["sweep"]["values"] == {"lr": "0.2"} and v2.metadata["kind"] == "m"
    monkeypatch.delenv("NEMOTRON_SWEEP_ID")
    reg.publish("model", tmp_path / "a")
    assert "sweep" not in reg.versions("model")[-1].metadata  # not a sweep: nothing added
