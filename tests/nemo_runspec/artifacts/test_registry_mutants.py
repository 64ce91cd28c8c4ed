"""ArtifactRegistry.gc() (docs/artifacts.md): removes what crashed publishes left (staging
directories, payload directories without a record, temporary files, unfinished alias
updates) and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nemo_runspec.artifacts.registry import ArtifactRegistry


@pytest.fixture
def published(tmp_path: Path) -> tuple[ArtifactRegistry, Path]:
    src = tmp_path / "src"
    src.mkdir()
    (src / "data.bin").write_bytes(b"payload")
    root = tmp_path / "reg"
    reg = ArtifactRegistry(str(root))
    assert reg.publish("ds", str(src), copy=True).version == 1
    return reg, root


def test_gc_removes_every_kind_of_leftover_and_keeps_what_is_published(published) -> None:
    reg, root = published
    ds = root / "ds"
    (ds / ".staging-abc" / "x").mkdir(parents=True)               # a copy never moved in
    (ds / "v5").mkdir()                                            # payload without a record
    (ds / "v5" / "data.bin").write_bytes(b"orphan")
    (ds / "aliases.json.tmp-123").write_text("{}")                 # a half-written file
    (ds / "aliases.json.pending-v7").write_text('{"latest": 7}')   # its record never came
    (ds / "aliases.json.pending-v1").write_text(json.dumps({"latest": 1, "best": 1}))  # record exists
    (root / "not a name").mkdir()                                   # not an artifact: left alone
    (root / "not a name" / ".staging-x").mkdir()

    removed = reg.gc()

    assert sorted(removed) == sorted(str(ds / n) for n in (".staging-abc", "v5", "aliases.json.tmp-123"))
    assert sorted(p.name for p in ds.iterdir()) == [".lock", "aliases.json", "v1", "v1.json"]
    assert json.loads((ds / "aliases.json").read_text()) == {"latest": 1, "best": 1}  # finished
    assert reg.resolve("ds:best").version == 1 and reg.resolve("ds:latest").version == 1
    assert (ds / "v1" / "data.bin").read_bytes() == b"payload"
    assert (root / "not a name" / ".staging-x").is_dir()
    assert reg.gc() == []  # nothing left to remove


def test_gc_of_a_registry_that_does_not_exist_yet(tmp_path: Path) -> None:
    assert ArtifactRegistry(str(tmp_path / "none")).gc() == []
    assert not (tmp_path / "none").exists()
