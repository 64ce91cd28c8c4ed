"""All or nothing: a publish that fails leaves no trace; one killed after its commit point has published.

Each failure is injected at one step of a real publish on a real directory; the
registry tree (every file's bytes) is compared before and after.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
from pathlib import Path

import pytest

from nemo_runspec.artifacts.errors import ArtifactPublishError, ArtifactVersionNotFoundError
from nemo_runspec.artifacts.fsspec_backend import FsspecBackend
from nemo_runspec.artifacts.registry import ArtifactRegistry

CTX = mp.get_context("fork")


def tree(root: Path) -> dict[str, bytes | None]:
    """Every directory (None) and file (its bytes) under ``root``, but the lock file."""
    out: dict[str, bytes | None] = {}
    for p in sorted(root.rglob("*")):
        if p.name != ".lock":
            out[str(p.relative_to(root))] = None if p.is_dir() else p.read_bytes()
    return out


def make_payload(path: Path, marker: str) -> Path:
    (path / "shards").mkdir(parents=True)
    (path / "marker").write_text(marker)
    (path / "shards" / "a.bin").write_bytes(marker.encode() * 3)
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "registry"


@pytest.fixture
def reg(root: Path, tmp_path: Path) -> ArtifactRegistry:
    """A registry holding ds:v1 (copied, aliases latest and first)."""
    r = ArtifactRegistry(backend=FsspecBackend(root, lock_timeout=5))
    r.publish("ds", make_payload(tmp_path / "one", "one"), copy=True, aliases=("latest", "first"))
    return r


@pytest.fixture
def two(tmp_path: Path) -> Path:
    return make_payload(tmp_path / "two", "two")


def assert_second_publish_is_clean(reg: ArtifactRegistry, root: Path, two: Path) -> None:
    art = reg.publish("ds", two, copy=True, aliases=("latest", "again"))
    assert art.version == 2 and art.aliases == ("again", "latest")
    assert sorted(p.name for p in (root / "ds" / "v2").rglob("*")) == ["a.bin", "marker", "shards"]
    assert (root / "ds" / "v2" / "marker").read_text() == "two"
    assert json.loads((root / "ds" / "aliases.json").read_text()) == {"latest": 2, "first": 1, "again": 2}
    assert not [p for p in (root / "ds").iterdir() if "pending" in p.name or p.name.startswith(".staging")]


def test_corrupt_alias_file_fails_publish_without_trace(reg, root, two):
    aliases = root / "ds" / "aliases.json"
    aliases.write_text('{"latest": 1, "first": ')
    before = tree(root)
    with pytest.raises(ArtifactPublishError) as info:
        reg.publish("ds", two, copy=True, aliases=("latest", "second"))
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(f"{aliases}:1: corrupt alias file of artifact 'ds': invalid JSON, expecting value; "
                          "nothing was published (restore it")
    assert tree(root) == before


def _fail_writing(backend: FsspecBackend, monkeypatch, suffix: str) -> None:
    real = backend._write_json_atomic

    def write(path, data, *, exclusive=False):
        if path.endswith(suffix):
            raise OSError(28, "injected: no space left on device")
        return real(path, data, exclusive=exclusive)

    monkeypatch.setattr(backend, "_write_json_atomic", write)


def _fail_moving(backend: FsspecBackend, monkeypatch, suffix: str) -> None:
    real = backend._move

    def move(src, dst):
        if dst.endswith(suffix):
            raise OSError(5, "injected: input/output error")
        return real(src, dst)

    monkeypatch.setattr(backend, "_move", move)


@pytest.mark.parametrize("step", ["alias map", "payload move", "version record"])
def test_failed_step_leaves_no_trace(step, reg, root, two, monkeypatch):
    backend: FsspecBackend = reg.backend  # type: ignore[assignment]
    if step == "alias map":
        _fail_writing(backend, monkeypatch, "aliases.json.pending-v2")
    elif step == "payload move":
        _fail_moving(backend, monkeypatch, "/ds/v2")
    else:
        _fail_writing(backend, monkeypatch, "/ds/v2.json")
    before = tree(root)
    with pytest.raises(OSError, match="injected"):
        reg.publish("ds", two, copy=True, aliases=("latest", "second"))
    assert tree(root) == before
    monkeypatch.undo()
    assert_second_publish_is_clean(reg, root, two)


def test_metadata_that_is_not_json_fails_before_anything_is_written(reg, root, two):
    before = tree(root)
    with pytest.raises(ArtifactPublishError, match="metadata is not JSON-serializable"):
        reg.publish("ds", two, copy=True, metadata={"where": Path("/x")})
    assert tree(root) == before


def test_failure_after_the_commit_point_has_still_published(reg, root, two, monkeypatch):
    """The record is the commit point: if moving the new alias map into place fails,
    readers use the pending map and the next writer finishes the move."""
    _fail_moving(reg.backend, monkeypatch, "/ds/aliases.json")
    art = reg.publish("ds", two, copy=True, aliases=("latest", "second"))
    assert (art.version, art.aliases) == (2, ("latest", "second"))
    assert json.loads((root / "ds" / "aliases.json").read_text()) == {"latest": 1, "first": 1}
    reader = ArtifactRegistry(root)
    assert reader.resolve("ds:latest").version == 2 and reader.resolve("ds:second").version == 2
    assert [a.aliases for a in reader.versions("ds")] == [("first",), ("latest", "second")]
    monkeypatch.undo()
    reg.set_alias("ds:v1", "third")
    assert json.loads((root / "ds" / "aliases.json").read_text()) == {
        "latest": 2, "first": 1, "second": 2, "third": 1}
    assert not [p for p in (root / "ds").iterdir() if "pending" in p.name]


def _publish_and_die(root: str, src: str, after_commit: bool) -> None:
    backend = FsspecBackend(root)
    real = backend._write_json_atomic

    def write(path, data, *, exclusive=False):
        if path.endswith("/ds/v2.json"):
            if after_commit:
                real(path, data, exclusive=exclusive)
            os._exit(70)  # killed: no cleanup, no finally, the lock still held
        return real(path, data, exclusive=exclusive)

    backend._write_json_atomic = write  # type: ignore[method-assign]
    ArtifactRegistry(backend=backend).publish("ds", src, copy=True, aliases=("latest", "second"))


def _run_and_die(root: Path, src: Path, *, after_commit: bool) -> None:
    p = CTX.Process(target=_publish_and_die, args=(str(root), str(src), after_commit))
    p.start()
    p.join(60)
    assert p.exitcode == 70


def test_publisher_killed_before_its_commit_point_published_nothing(reg, root, tmp_path, two):
    before = tree(root)
    _run_and_die(root, make_payload(tmp_path / "dead", "dead"), after_commit=False)
    # its pending alias map and moved payload are on disk, but nothing of it is visible
    assert (root / "ds" / "aliases.json.pending-v2").exists() and (root / "ds" / "v2" / "marker").exists()
    reader = ArtifactRegistry(root)
    assert [a.version for a in reader.versions("ds")] == [1]
    assert reader.resolve("ds:latest").version == 1
    with pytest.raises(ArtifactVersionNotFoundError, match="no alias 'second'"):
        reader.resolve("ds:second")
    assert reg.gc() == [str(root / "ds" / "v2")]  # within lock_timeout=5: the dead holder's lock is gone
    assert tree(root) == before
    assert_second_publish_is_clean(reg, root, two)


def test_publisher_killed_after_its_commit_point_has_published(reg, root, tmp_path, two):
    _run_and_die(root, make_payload(tmp_path / "dead", "dead"), after_commit=True)
    assert json.loads((root / "ds" / "aliases.json").read_text()) == {"latest": 1, "first": 1}
    reader = ArtifactRegistry(root)
    assert reader.resolve("ds:latest").version == 2
    assert reader.resolve("ds:second").path == str(root / "ds" / "v2")
    assert (root / "ds" / "v2" / "marker").read_text() == "dead"
    art = reg.publish("ds", two, copy=True, aliases=("latest", "third"))
    assert art.version == 3
    assert json.loads((root / "ds" / "aliases.json").read_text()) == {
        "latest": 3, "first": 1, "second": 2, "third": 3}
    assert not [p for p in (root / "ds").iterdir() if "pending" in p.name]


def test_failed_import_leaves_the_data_directory_as_it_found_it(tmp_path):
    """`data import pretrain` on a bare directory writes blend.json into it; a failed publish removes it."""
    from nemotron.cli.commands.nano3.data.import_._common import import_data

    data = tmp_path / "bare"
    data.mkdir()
    # the layout check only needs each .bin to have its .idx; the bytes are not read
    (data / "shard_0.bin").write_bytes(b"\x00" * 64)
    (data / "shard_0.idx").write_bytes(b"MMIDIDX\x00\x00")
    reg = ArtifactRegistry(tmp_path / "registry")
    reg.publish("nano3-pretrain-data", tmp_path)
    (tmp_path / "registry" / "nano3-pretrain-data" / "aliases.json").write_text("{not json")
    with pytest.raises(ArtifactPublishError, match="corrupt alias file"):
        import_data("pretrain", data, registry=reg)
    assert sorted(p.name for p in data.iterdir()) == ["shard_0.bin", "shard_0.idx"]
    assert sorted(p.name for p in (tmp_path / "registry" / "nano3-pretrain-data").iterdir()) == [
        ".lock", "aliases.json", "v1.json"]
