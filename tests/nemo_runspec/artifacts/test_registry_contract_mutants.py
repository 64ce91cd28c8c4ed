"""The artifact registry's rules that mutation testing found unstated (docs/dev/mutation.md):
the whole flow on a remote (``memory://``) store and under a local root with a space in
it, single-file payloads, version records read back field by field, selectors, where the
registry comes from, and every error checked whole (message, key, hint)."""

from __future__ import annotations

import dataclasses
import json
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from nemo_runspec.artifacts import registry as registry_module
from nemo_runspec.artifacts.errors import (
    ArtifactError,
    ArtifactNotFoundError,
    ArtifactPublishError,
    ArtifactVersionNotFoundError,
)
from nemo_runspec.artifacts.fsspec_backend import FsspecBackend
from nemo_runspec.artifacts.registry import (
    ArtifactRegistry,
    WandbBackend,
    get_registry,
    registry_for,
    registry_from_config,
    set_registry,
)


@pytest.fixture(params=["memory", "local with a space"])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "memory":
        url = f"memory://reg-{uuid.uuid4().hex}"
        yield url
        fs = fsspec.filesystem("memory")
        if fs.exists(url):
            fs.rm(url, recursive=True)
    else:
        yield str(tmp_path / "my registry" / "artifacts")


def test_the_whole_flow_on_any_store(root: str, payload: Path) -> None:
    reg = ArtifactRegistry(root)
    backend = reg.backend
    assert isinstance(backend, FsspecBackend)
    v1 = reg.publish("ds", payload, copy=True, metadata={"n": 1})
    v2 = reg.publish("ds", payload / "blend.json", copy=True)
    v3 = reg.publish("ds", payload, aliases=("latest", "best"))
    reg.publish("other", payload)
    assert (v1.version, v2.version, v3.version) == (1, 2, 3)
    assert (v1.name, v1.metadata, v1.backend, v3.aliases) == ("ds", {"n": 1}, "fsspec", ("best", "latest"))
    assert v1.path.endswith("/ds/v1") and v2.path.endswith("/ds/v2")
    assert v3.path == str(payload.resolve())
    fs = backend.fs
    assert fs.cat_file(f"{v1.path}/shards/a.bin") == b"\x00\x01" * 1000
    assert fs.cat_file(f"{v2.path}/blend.json") == b'{"train": 1}'  # a file keeps its name
    assert reg.list() == ["ds", "other"]
    assert [a.version for a in reg.versions("ds")] == [1, 2, 3]
    assert [a.aliases for a in reg.versions("ds")] == [(), (), ("best", "latest")]
    assert reg.resolve("ds").version == 3 and reg.resolve("ds:best").version == 3
    assert reg.resolve("ds:v1") == dataclasses.replace(v1, aliases=())  # 'latest' moved on
    moved = reg.set_alias("ds:v2", "best")
    assert moved.aliases == ("best",) and reg.resolve("ds:best").version == 2
    assert reg.gc() == []
    assert [a.version for a in reg.versions("ds")] == [1, 2, 3]


def test_a_remote_store_sees_another_writer_at_once(payload: Path) -> None:
    """Remote listings are cached by fsspec: each read lists again."""
    url = f"memory://reg-{uuid.uuid4().hex}"
    a, b = ArtifactRegistry(url), ArtifactRegistry(url)
    a.publish("ds", payload)
    assert b.resolve("ds").version == 1
    a.publish("ds", payload)
    assert b.resolve("ds").version == 2 and [x.version for x in b.versions("ds")] == [1, 2]


def test_a_record_is_written_in_utc(tmp_path: Path, payload: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "America/Los_Angeles")
    time.tzset()
    try:
        art = ArtifactRegistry(tmp_path / "r").publish("ds", payload)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", art.created)
    made = time.mktime(time.strptime(art.created, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    assert abs(made - time.time()) < 120
    record = json.loads((tmp_path / "r" / "ds" / "v1.json").read_text())
    assert record == {"name": "ds", "version": 1, "path": str(payload.resolve()), "metadata": {},
                      "created": art.created}


# ------------------------------------------------------------------ version records read back


def _record(tmp_path: Path, **fields: Any) -> ArtifactRegistry:
    reg = ArtifactRegistry(tmp_path / "r")
    (tmp_path / "r" / "ds").mkdir(parents=True)
    (tmp_path / "r" / "ds" / "v1.json").write_text(json.dumps(fields))
    return reg


@pytest.mark.parametrize(("fields", "problem"), [
    ({"path": "/d", "created": 5}, "'created' is not a string"),
    ({"path": "/d", "version": 2}, "it says version 2"),
    ({"path": "/d", "version": None}, "it says version None"),
    ({"path": "/d", "metadata": None}, "'metadata' is not an object"),
    ({"path": ""}, "no 'path' string"),
])
def test_a_corrupt_record_is_named_with_its_problem(tmp_path: Path, fields: dict[str, Any], problem: str) -> None:
    with pytest.raises(ArtifactError) as info:
        _record(tmp_path, **fields).resolve("ds")
    err = info.value
    assert err.problem == f"corrupt version record of ds:v1: {problem}"
    assert err.path == str(tmp_path / "r" / "ds" / "v1.json")
    assert err.hint == "restore it, or move it out of the directory to drop version v1"


def test_a_record_that_is_not_an_object(tmp_path: Path) -> None:
    reg = _record(tmp_path)
    (tmp_path / "r" / "ds" / "v1.json").write_text("[1]")
    with pytest.raises(ArtifactError, match="corrupt version record of ds:v1: expected an object, found list"):
        reg.resolve("ds")


def test_a_corrupt_alias_file_says_how_to_recover(tmp_path: Path, payload: Path) -> None:
    reg = ArtifactRegistry(tmp_path / "r")
    reg.publish("ds", payload)
    (tmp_path / "r" / "ds" / "aliases.json").write_text('{"latest": "x"}')
    with pytest.raises(ArtifactError) as info:
        reg.resolve("ds")
    assert info.value.hint == ("restore it, or delete it to drop these aliases: the versions stay "
                               "and 'latest' falls back to the highest one")


def test_an_unreadable_record_names_the_os_error(tmp_path: Path, payload: Path) -> None:
    reg = ArtifactRegistry(tmp_path / "r")
    reg.publish("ds", payload)
    record = tmp_path / "r" / "ds" / "v1.json"
    record.unlink()
    record.mkdir()  # reading a directory: IsADirectoryError, an OSError with a strerror
    with pytest.raises(ArtifactError) as info:
        reg.resolve("ds")
    assert info.value.problem == "cannot read version record of ds:v1: Is a directory"


# ------------------------------------------------------------------ selectors


def test_unknown_names_versions_and_aliases_are_errors_naming_them(tmp_path: Path, payload: Path) -> None:
    reg = ArtifactRegistry(tmp_path / "r")
    with pytest.raises(ArtifactNotFoundError) as info:
        reg.resolve("ds")
    assert info.value.problem == f"artifact 'ds' not found in {tmp_path / 'r'}"
    assert info.value.key == "ds"
    assert info.value.hint == "publish it first (e.g. run its data prep stage) or `nemotron nano3 data import`"
    reg.publish("ds", payload, aliases=("latest", "best"))
    reg.publish("ds", payload)
    with pytest.raises(ArtifactVersionNotFoundError) as info:
        reg.resolve("ds:bets")
    assert (info.value.problem, info.value.key) == ("artifact 'ds' has no alias 'bets'", "ds:bets")
    assert info.value.hint == "did you mean 'best'?; valid: best, latest"
    with pytest.raises(ArtifactVersionNotFoundError) as info:
        reg.resolve("ds:zzzzzz")
    assert info.value.hint == "valid: best, latest"
    with pytest.raises(ArtifactVersionNotFoundError) as info:
        reg.resolve("ds:v9")
    assert (info.value.problem, info.value.key, info.value.hint) == (
        "artifact 'ds' has no version v9", "ds:v9", "available: v1, v2")
    with pytest.raises(ArtifactVersionNotFoundError) as info:
        reg.backend.set_alias("ds", "best", 9)
    assert (info.value.problem, info.value.key) == ("artifact 'ds' has no version v9", "ds:v9")


# ------------------------------------------------------------------ publish errors


def test_publish_errors_are_whole(tmp_path: Path, payload: Path) -> None:
    reg = ArtifactRegistry(tmp_path / "r")

    def err(*args: Any, **kwargs: Any) -> ArtifactPublishError:
        with pytest.raises(ArtifactPublishError) as info:
            reg.publish(*args, **kwargs)
        return info.value

    e = err("-bad", payload)
    assert (e.problem, e.key, e.hint) == ("invalid artifact name '-bad'", None, "letters, digits, '.', '_' and '-'")
    e = err("ds", payload, aliases=("v3",))
    assert (e.problem, e.key, e.hint) == (
        "invalid alias 'v3'", "ds", "aliases start with a letter and are not version numbers")
    e = err("ds", tmp_path / "nope")
    assert (e.problem, e.key) == (f"nothing to publish: {tmp_path / 'nope'} does not exist", "ds")
    e = err("ds", None, copy=True)
    assert (e.problem, e.key) == ("copy=True needs a source path", "ds")
    e = err("ds", payload, metadata={"x": object()})
    assert e.problem.startswith("metadata is not JSON-serializable: ") and e.key == "ds"
    assert not (tmp_path / "r" / "ds").exists() or list((tmp_path / "r" / "ds").glob("v*")) == []


def test_a_copy_of_a_missing_source_names_it(tmp_path: Path) -> None:
    with pytest.raises(ArtifactPublishError) as info:
        ArtifactRegistry(tmp_path / "r").publish("ds", tmp_path / "nope", copy=True)
    assert info.value.problem == f"nothing to publish: {tmp_path / 'nope'} does not exist"
    assert list((tmp_path / "r" / "ds").iterdir()) == []  # no staging dir left


def test_a_lock_timeout_names_the_artifact(tmp_path: Path, payload: Path) -> None:
    backend = FsspecBackend(tmp_path / "r", lock_timeout=0.2)
    reg = ArtifactRegistry(backend=backend)
    reg.publish("ds", payload)
    with backend._lock("ds"), pytest.raises(ArtifactPublishError) as info:
        reg.publish("ds", payload)
    assert info.value.key == "ds" and info.value.problem.endswith("; nothing was published")
    assert str(tmp_path / "r" / "ds") in str(info.value)


def test_pipeline_provenance_goes_into_the_metadata(tmp_path: Path, payload: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEMOTRON_PIPE_FINGERPRINT", "fp1")
    monkeypatch.setenv("NEMOTRON_PIPE_ID", "id1")
    art = ArtifactRegistry(tmp_path / "r").publish("ds", payload, metadata={"a": 1})
    contents = art.metadata.pop("contents")  # a job's publish also records what the path held
    art.metadata.pop("inputs", None)  # (and what this process read: earlier tests' references)
    assert art.metadata == {"a": 1, "pipe_key": "fp1", "pipe_id": "id1"}
    assert contents["files"] == len([p for p in payload.rglob("*") if p.is_file()])


def test_a_url_source_is_recorded_as_given(tmp_path: Path) -> None:
    art = ArtifactRegistry(tmp_path / "r").publish("ds", "s3://bucket/data")
    assert art.path == "s3://bucket/data"


def test_a_relative_source_is_recorded_absolute(tmp_path: Path, payload: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(payload.parent)
    assert ArtifactRegistry(tmp_path / "r").publish("ds", payload.name).path == str(payload.resolve())


# ------------------------------------------------------------------ where the registry is


def test_the_default_root_is_nemotron_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    assert ArtifactRegistry().location == str(tmp_path / "home" / "artifacts")


def test_a_wandb_url_root_is_the_wandb_backend() -> None:
    reg = ArtifactRegistry("wandb://team/proj")
    assert isinstance(reg.backend, WandbBackend)
    assert (reg.backend.entity, reg.backend.project) == ("team", "proj")
    assert ArtifactRegistry(backend=reg.backend).backend is reg.backend
    assert ArtifactRegistry(backend=reg.backend).gc() == []


def test_registry_from_config() -> None:
    reg = registry_from_config({"backend": "wandb", "root": "/dl"}, wandb={"entity": "e", "project": "p"})
    assert isinstance(reg.backend, WandbBackend)
    assert (reg.backend.entity, reg.backend.project, reg.backend.download_root) == ("e", "p", "/dl")
    reg = registry_from_config({"backend": "wandb", "entity": "E", "project": "P"}, wandb={"entity": "e"})
    assert (reg.backend.entity, reg.backend.project) == ("E", "P")
    assert isinstance(registry_from_config({"backend": "wandb"}).backend, WandbBackend)
    assert registry_from_config({"backend": "fsspec", "root": "memory://m"}).location == "memory://m"
    with pytest.raises(ArtifactError) as info:
        registry_from_config({"backend": "fspec"})
    assert (info.value.problem, info.value.key, info.value.hint) == (
        "unknown artifacts backend 'fspec'", "artifacts.backend",
        "did you mean 'fsspec'?; valid: file, fsspec, wandb")
    with pytest.raises(ArtifactError) as info:
        registry_from_config({"backend": "zzzzzz"})
    assert info.value.hint == "valid: file, fsspec, wandb"


def test_a_config_root_is_expanded_and_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert registry_from_config({"root": "~/arts"}).location == str(tmp_path / "arts")
    monkeypatch.chdir(tmp_path)
    assert registry_from_config({"backend": "file", "root": "rel"}).location == str(tmp_path / "rel")
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    assert registry_from_config(None).location == str(tmp_path / "home" / "artifacts")


def test_registry_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEMOTRON_ARTIFACTS_ROOT", raising=False)
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    assert registry_for(None).location == str(tmp_path / "home" / "artifacts")
    assert registry_for({"artifacts": {"root": str(tmp_path / "a")}}).location == str(tmp_path / "a")
    reg = registry_for({"artifacts": {"backend": "wandb"}, "wandb": {"entity": "e", "project": "p"}})
    assert (reg.backend.entity, reg.backend.project) == ("e", "p")
    monkeypatch.setenv("NEMOTRON_ARTIFACTS_ROOT", str(tmp_path / "env"))
    assert registry_for({"artifacts": {"root": str(tmp_path / "a")}}).location == str(tmp_path / "env")


def test_get_registry_reads_the_env_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEMOTRON_ARTIFACTS_ROOT", raising=False)
    env = tmp_path / "env.toml"
    env.write_text(f'[artifacts]\nroot = "{tmp_path / "from-env-toml"}"\n')
    monkeypatch.setenv("NEMOTRON_ENV_FILE", str(env))
    monkeypatch.setattr(registry_module, "_REGISTRY", None)
    try:
        assert get_registry().location == str(tmp_path / "from-env-toml")
        assert get_registry() is get_registry()
        monkeypatch.setenv("NEMOTRON_ARTIFACTS_ROOT", str(tmp_path / "env"))
        set_registry(None)
        assert get_registry().location == str(tmp_path / "env")
    finally:
        set_registry(None)


# ------------------------------------------------------------------ commit details


def test_a_version_taken_by_a_writer_that_ignored_the_lock_is_skipped(
        tmp_path: Path, payload: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The record is created exclusively: a number someone else took is never overwritten."""
    backend = FsspecBackend(tmp_path / "r")
    reg = ArtifactRegistry(backend=backend)
    reg.publish("ds", payload, metadata={"who": "first"})
    real = backend._listing
    stale = [True]

    def listing(name: str) -> tuple[list[int], list[int]]:
        if stale and stale.pop():
            return [], []  # as if v1 was not there yet
        return real(name)

    monkeypatch.setattr(backend, "_listing", listing)
    art = reg.publish("ds", payload, metadata={"who": "second"})
    assert art.version == 2
    assert reg.resolve("ds:v1").metadata == {"who": "first"}


def test_publish_gives_up_after_twenty_taken_numbers(
        tmp_path: Path, payload: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = FsspecBackend(tmp_path / "r")
    calls: list[int] = []

    def taken(*args: Any) -> Any:
        calls.append(1)
        raise FileExistsError

    monkeypatch.setattr(backend, "_commit", taken)
    with pytest.raises(ArtifactPublishError) as info:
        ArtifactRegistry(backend=backend).publish("ds", payload)
    assert (info.value.problem, info.value.key) == ("could not allocate a version for 'ds'", "ds")
    assert len(calls) == 20


def test_a_payload_dir_left_by_a_killed_publisher_is_replaced(tmp_path: Path, payload: Path) -> None:
    (tmp_path / "r" / "ds" / "v1").mkdir(parents=True)
    (tmp_path / "r" / "ds" / "v1" / "junk").write_text("x")
    art = ArtifactRegistry(tmp_path / "r").publish("ds", payload, copy=True)
    assert art.version == 1
    assert sorted(p.name for p in Path(art.path).iterdir()) == ["blend.json", "shards"]


def test_an_alias_other_than_latest_without_a_latest_alias(tmp_path: Path, payload: Path) -> None:
    reg = ArtifactRegistry(tmp_path / "r")
    for _ in range(3):
        reg.publish("ds", payload, aliases=())
    reg.set_alias("ds:v2", "best")
    assert reg.resolve("ds:best").version == 2 and reg.resolve("ds").version == 3


def test_a_corrupt_pending_alias_map_names_the_artifact(tmp_path: Path, payload: Path) -> None:
    reg = ArtifactRegistry(tmp_path / "r")
    reg.publish("ds", payload)
    (tmp_path / "r" / "ds" / "aliases.json.pending-v1").write_text("[]")
    with pytest.raises(ArtifactError) as info:
        reg.resolve("ds")
    assert info.value.problem.startswith("corrupt alias file of artifact 'ds': expected an object")


def test_a_directory_without_versions_is_not_an_artifact(tmp_path: Path, payload: Path) -> None:
    reg = ArtifactRegistry(tmp_path / "r")
    reg.publish("ds", payload)
    (tmp_path / "r" / "half-published" / ".staging-abc").mkdir(parents=True)
    (tmp_path / "r" / "_not_a_name").mkdir()
    assert reg.list() == ["ds"]


def test_get_registry_without_any_env_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEMOTRON_ARTIFACTS_ROOT", raising=False)
    monkeypatch.delenv("NEMOTRON_ENV_FILE", raising=False)
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    (tmp_path / "proj" / ".git").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "proj")
    monkeypatch.setattr(registry_module, "_REGISTRY", None)
    try:
        assert get_registry().location == str(tmp_path / "home" / "artifacts")
    finally:
        set_registry(None)
