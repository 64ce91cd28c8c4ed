"""Artifact registry, art:// filesystem, ${art:...} resolver and the multi-rank handoff."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import threading
import time
from pathlib import Path

import fsspec
import pytest
from omegaconf import OmegaConf

from nemo_runspec.artifacts.errors import (
    ArtifactError,
    ArtifactNotFoundError,
    ArtifactPublishError,
    ArtifactVersionNotFoundError,
)
from nemo_runspec.artifacts.registry import (
    ArtifactRegistry,
    FsspecBackend,
    parse_ref,
    registry_from_config,
    set_registry,
)
from nemo_runspec.config import resolvers


@pytest.fixture
def payload(tmp_path: Path) -> Path:
    d = tmp_path / "out"
    (d / "shards").mkdir(parents=True)
    (d / "blend.json").write_text('{"train": ["1.0", "x"]}')
    (d / "shards" / "a.bin").write_bytes(b"\x00\x01\x02")
    return d


@pytest.fixture
def reg(tmp_path: Path):
    r = ArtifactRegistry(tmp_path / "registry")
    set_registry(r)
    resolvers.pin(None)
    yield r
    set_registry(None)
    resolvers.pin(None)


def test_parse_ref_forms():
    assert parse_ref("data") == ("data", "latest")
    assert parse_ref("data:v3") == ("data", "v3")
    assert parse_ref("art://data:2/blend.json") == ("data", "2")
    with pytest.raises(ArtifactError, match="invalid artifact reference"):
        parse_ref(":v1")


def test_publish_by_reference_versions_and_latest(reg, payload):
    a1 = reg.publish("ds", payload, metadata={"tokens": 10})
    a2 = reg.publish("ds", payload, metadata={"tokens": 20})
    assert (a1.version, a2.version) == (1, 2)
    assert reg.resolve("ds").version == 2
    assert reg.resolve("ds:latest").metadata["tokens"] == 20
    assert reg.resolve("ds:v1").metadata["tokens"] == 10
    assert reg.resolve("ds:1").path == str(payload.resolve())
    assert reg.resolve("ds:v2").aliases == ("latest",)
    assert [a.version for a in reg.versions("ds")] == [1, 2]
    assert reg.list() == ["ds"]


def test_publish_copy_is_independent_of_source(reg, payload):
    art = reg.publish("ds", payload, copy=True)
    (payload / "blend.json").write_text("changed")
    assert Path(art.path, "blend.json").read_text() == '{"train": ["1.0", "x"]}'
    assert Path(art.path, "shards", "a.bin").read_bytes() == b"\x00\x01\x02"


def test_aliases(reg, payload):
    reg.publish("ds", payload)
    reg.publish("ds", payload)
    reg.set_alias("ds:v1", "prod")
    assert reg.resolve("ds:prod").version == 1
    with pytest.raises(ArtifactVersionNotFoundError, match="no alias 'prd'.*did you mean 'prod'"):
        reg.resolve("ds:prd")


def test_unknown_name_and_version_errors(reg, payload):
    reg.publish("nano3-pretrain-data-tiny", payload)
    with pytest.raises(ArtifactNotFoundError, match="did you mean 'nano3-pretrain-data-tiny'"):
        reg.resolve("nano3-pretrain-data-tin")
    with pytest.raises(ArtifactVersionNotFoundError, match=r"no version v7 .*available: v1"):
        reg.resolve("nano3-pretrain-data-tiny:v7")


def test_publish_missing_source_registers_nothing(reg, tmp_path):
    with pytest.raises(ArtifactPublishError, match="does not exist"):
        reg.publish("ds", tmp_path / "nope")
    assert reg.list() == []


def test_crashed_copy_leaves_no_half_version(reg, payload, monkeypatch):
    reg.publish("ds", payload, copy=True)
    backend: FsspecBackend = reg.backend  # type: ignore[assignment]
    real = backend._write_json_atomic

    def crash(path, data, *, exclusive=False):
        if path.endswith("v2.json"):
            raise OSError("disk full")
        return real(path, data, exclusive=exclusive)

    monkeypatch.setattr(backend, "_write_json_atomic", crash)
    with pytest.raises(OSError, match="disk full"):
        reg.publish("ds", payload, copy=True)
    monkeypatch.undo()
    assert [a.version for a in reg.versions("ds")] == [1]
    assert reg.resolve("ds:latest").version == 1
    # the next publish reuses the number cleanly
    assert reg.publish("ds", payload, copy=True).version == 2


def _publish_many(root: str, n: int, q) -> None:
    r = ArtifactRegistry(root)
    q.put([r.publish("ds", root, copy=False).version for _ in range(n)])


def test_concurrent_publishers_get_distinct_versions(tmp_path):
    root = str(tmp_path / "registry")
    Path(root).mkdir()
    q = mp.get_context("fork").Queue()
    procs = [mp.get_context("fork").Process(target=_publish_many, args=(root, 10, q)) for _ in range(3)]
    for p in procs:
        p.start()
    versions = sum((q.get(timeout=60) for _ in procs), [])
    for p in procs:
        p.join()
    assert sorted(versions) == list(range(1, 31))


def test_registry_from_config_and_unknown_backend(tmp_path):
    r = registry_from_config({"backend": "file", "root": str(tmp_path / "r")})
    assert r.location == str(tmp_path / "r")
    with pytest.raises(ArtifactError, match="unknown artifacts backend 'wandbb'.*did you mean 'wandb'"):
        registry_from_config({"backend": "wandbb"})


def test_memory_fsspec_backend(payload):
    r = ArtifactRegistry("memory://reg-test")
    art = r.publish("ds", payload, copy=True)
    assert art.path.startswith("memory://")
    with fsspec.open(art.path + "/blend.json", "rt") as f:
        assert json.load(f) == {"train": ["1.0", "x"]}


def test_art_filesystem(reg, payload):
    import nemo_runspec.artifacts.filesystem  # noqa: F401 - registers art://

    reg.publish("ds", payload, copy=True)
    with fsspec.open("art://ds:latest/blend.json", "rt") as f:
        assert json.load(f)["train"] == ["1.0", "x"]
    fs = fsspec.filesystem("art")
    assert sorted(fs.ls("art://ds:v1", detail=False)) == ["ds:v1/blend.json", "ds:v1/shards"]
    assert fs.cat_file("art://ds/shards/a.bin") == b"\x00\x01\x02"
    with pytest.raises(PermissionError):
        fs.open("art://ds/new.txt", "wb")


def test_art_resolver_through_run_section(reg, payload):
    art = reg.publish("nano3-pretrain-data-tiny", payload, metadata={"total_tokens": 1234})
    resolvers.register_resolvers()
    cfg = OmegaConf.create({
        "run": {"data": "nano3-pretrain-data-tiny:latest"},
        "data": {
            "path": "${art:data,path}",
            "blend": "${art:data,path}/blend.json",
            "tokens": "${art:data,metadata.total_tokens}",
            "version": "${art:data,version}",
            "literal": "${art:nano3-pretrain-data-tiny:v1}",
        },
    })
    assert cfg.data.path == art.path
    assert cfg.data.blend == f"{art.path}/blend.json"
    assert cfg.data.tokens == 1234
    assert cfg.data.version == 1
    assert cfg.data.literal == art.path


def test_art_resolver_errors(reg, payload):
    resolvers.register_resolvers()
    cfg = OmegaConf.create({"run": {}, "x": "${art:data,path}"})
    with pytest.raises(Exception, match=r"run.data is not set"):
        _ = cfg.x
    reg.publish("ds", payload)
    cfg = OmegaConf.create({"run": {"data": "ds"}, "x": "${art:data,size}"})
    with pytest.raises(Exception, match="unknown artifact field 'size'"):
        _ = cfg.x


def test_handoff_rank0_resolves_others_read(reg, payload, tmp_path):
    art = reg.publish("ds", payload)
    cfg = OmegaConf.create({"run": {"data": "ds:latest"}, "p": "${art:data,path}"})
    calls = []

    def counting(ref):
        calls.append(ref)
        return reg.resolve(ref).to_dict()

    results = {}

    def worker():
        results["r1"] = resolvers.resolve_artifacts_once(cfg, tmp_path / "job", rank=1, resolver=counting)

    t = threading.Thread(target=worker)
    t.start()
    time.sleep(0.3)
    results["r0"] = resolvers.resolve_artifacts_once(cfg, tmp_path / "job", rank=0, resolver=counting)
    t.join(5)
    assert calls == ["ds:latest"]  # resolved once, by rank 0
    assert results["r1"]["ds:latest"]["path"] == art.path == results["r0"]["ds:latest"]["path"]
    assert not list((tmp_path / "job").glob(".*tmp*"))


def test_handoff_failure_on_rank0_fails_others_fast(reg, tmp_path):
    cfg = OmegaConf.create({"run": {"data": "missing:latest"}, "p": "${art:data,path}"})
    with pytest.raises(ArtifactNotFoundError):
        resolvers.resolve_artifacts_once(cfg, tmp_path / "job", rank=0)
    t0 = time.monotonic()
    with pytest.raises(ArtifactError, match="rank 0 failed to resolve artifacts.*missing"):
        resolvers.resolve_artifacts_once(cfg, tmp_path / "job", rank=1, timeout=60)
    assert time.monotonic() - t0 < 10  # read the failure marker, not waited out the 60 s timeout


def test_handoff_timeout(tmp_path):
    cfg = OmegaConf.create({"run": {"data": "x:latest"}, "p": "${art:data,path}"})
    with pytest.raises(ArtifactError, match="timed out"):
        resolvers.resolve_artifacts_once(cfg, tmp_path / "job", rank=3, timeout=0.3)


def test_no_env_leak_of_registry_root(monkeypatch, tmp_path, payload):
    monkeypatch.setenv("NEMOTRON_ARTIFACTS_ROOT", str(tmp_path / "envroot"))
    set_registry(None)
    from nemo_runspec.artifacts.registry import get_registry

    r = get_registry()
    assert r.location == str(tmp_path / "envroot")
    r.publish("ds", payload)
    assert os.path.exists(tmp_path / "envroot" / "ds" / "v1.json")
    set_registry(None)


@pytest.mark.parametrize("alias", ["1bad", "v2", "has space", ""])
def test_invalid_alias_registers_nothing(reg, payload, alias):
    with pytest.raises(ArtifactPublishError, match="invalid alias"):
        reg.publish("ds", payload, aliases=("latest", alias))
    assert reg.list() == []


def test_a_run_whose_lease_is_gone_publishes_nothing(reg, payload, tmp_path, monkeypatch):
    """The lease a local run's command holds (a real file): while it exists the run
    publishes; once the command has begun to stop the run, a publish is refused."""
    lease = tmp_path / ".launch-lease"
    lease.touch()
    monkeypatch.setenv("NEMOTRON_LAUNCH_LEASE", str(lease))
    assert reg.publish("leased", str(payload)).version == 1
    lease.unlink()
    with pytest.raises(ArtifactPublishError, match="has stopped it"):
        reg.publish("leased", str(payload))
    assert [v.version for v in reg.versions("leased")] == [1]
