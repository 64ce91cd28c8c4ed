"""The fsspec store (artifacts/fsspec_backend.py) on its own: how it describes its store, whole publish errors, staging in the artifact dir, names and roots ending in x, a remote lock timeout naming its URL."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from nemo_runspec.artifacts.errors import (
    ArtifactError,
    ArtifactPublishError,
)
from nemo_runspec.artifacts.fsspec_backend import FsspecBackend
from nemo_runspec.artifacts.registry import (
    ArtifactRegistry,
)


def test_the_backend_describes_its_store(tmp_path: Path) -> None:
    local = FsspecBackend(str(tmp_path / "r") + "/")
    assert (local.protocol, local.local, local.root, local.url) == (
        "file", True, str(tmp_path / "r"), str(tmp_path / "r") + "/")
    remote = FsspecBackend("memory://x/y")
    assert (remote.protocol, remote.local, remote.root) == ("memory", False, "/x/y")
    assert FsspecBackend("file:///").root == "/"


def test_backend_publish_errors_are_whole(tmp_path: Path) -> None:
    backend = FsspecBackend(tmp_path / "r")
    with pytest.raises(ArtifactPublishError) as info:
        backend.publish("ds", "/x", metadata={}, aliases=["1x"], copy=False)
    assert (info.value.problem, info.value.key, info.value.hint) == (
        "invalid alias '1x'", "ds", "aliases start with a letter")
    with pytest.raises(ArtifactError) as info:
        backend.set_alias("ds", "1x", 1)
    assert (info.value.problem, info.value.key, info.value.hint) == (
        "invalid alias '1x'", "ds", "aliases start with a letter")


def test_the_copy_is_staged_in_the_artifact_dir(tmp_path: Path, payload: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """So gc (which looks in each artifact's dir) finds the staging dir of a killed copy."""
    from nemo_runspec.artifacts import fsspec_backend

    seen: list[str] = []
    real = fsspec_backend._copy_tree

    def spy(source: str, fs: Any, dest: str) -> None:
        seen.append(dest)
        real(source, fs, dest)

    monkeypatch.setattr(fsspec_backend, "_copy_tree", spy)
    ArtifactRegistry(tmp_path / "r").publish("ds", payload, copy=True)
    (dest,) = seen
    assert Path(dest).parent == tmp_path / "r" / "ds" and Path(dest).name.startswith(".staging-")


def test_names_ending_in_x_and_roots_ending_in_x(tmp_path: Path, payload: Path) -> None:
    reg = ArtifactRegistry(tmp_path / "regX")
    assert FsspecBackend(tmp_path / "regX").root == str(tmp_path / "regX")
    reg.publish("dsX", payload, copy=True)
    assert reg.list() == ["dsX"] and reg.resolve("dsX").version == 1
    assert reg.gc() == []


def test_a_lock_timeout_on_a_remote_store_names_its_url(payload: Path) -> None:
    url = f"memory://reg-{uuid.uuid4().hex}"
    backend = FsspecBackend(url, lock_timeout=0.2)
    reg = ArtifactRegistry(backend=backend)
    reg.publish("ds", payload)
    with backend._lock("ds"), pytest.raises(ArtifactPublishError) as info:
        reg.publish("ds", payload)
    assert f"memory://{backend.root}/ds/.lease" in str(info.value)
