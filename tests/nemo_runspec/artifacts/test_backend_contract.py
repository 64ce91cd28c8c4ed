"""One behavioural suite, run against both artifact backends: fsspec and W&B.

The W&B backend publishes with the real wandb package in offline mode (each
publish a real local run); its lookups go through ``wandb.Api()``, replaced by
``tests.wandb_offline.FakeApi``, which answers from those runs as the W&B
server would after ``wandb sync`` (the only part that is emulated). Everything
is checked through the registry's public calls, the same way for both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nemo_runspec.artifacts.errors import (
    ArtifactNotFoundError,
    ArtifactPublishError,
    ArtifactVersionNotFoundError,
)
from nemo_runspec.artifacts.registry import ArtifactRegistry, WandbBackend
from tests import wandb_offline


@pytest.fixture
def payload(tmp_path: Path) -> Path:
    d = tmp_path / "out"
    (d / "shards").mkdir(parents=True)
    (d / "blend.json").write_text('{"train": ["1.0", "x"]}')
    (d / "shards" / "a.bin").write_bytes(b"\x00\x01\x02")
    return d


@pytest.fixture(params=["fsspec", "wandb"])
def reg(request, tmp_path: Path, monkeypatch) -> ArtifactRegistry:
    if request.param == "fsspec":
        yield ArtifactRegistry(tmp_path / "registry")
        return
    import wandb

    server = wandb_offline.OfflineServer(wandb_offline.offline_env(monkeypatch, tmp_path))
    api = wandb_offline.FakeApi(server)
    monkeypatch.setattr(wandb, "Api", lambda *args, **kwargs: api)
    yield ArtifactRegistry(backend=WandbBackend(entity="team", project="proj",
                                                download_root=str(tmp_path / "downloads")))
    wandb_offline.teardown_wandb()


def test_versions_count_from_one_and_latest_is_newest(reg, payload):
    reg.publish("ds", payload, metadata={"tokens": 10})
    reg.publish("ds", payload, metadata={"tokens": 20, "nested": {"a": [1, 2]}})
    assert reg.resolve("ds").version == 2
    assert reg.resolve("ds:latest").metadata == {"tokens": 20, "nested": {"a": [1, 2]}}
    assert reg.resolve("ds:v1").metadata == {"tokens": 10}
    assert reg.resolve("ds:1").version == 1
    assert [a.version for a in reg.versions("ds")] == [1, 2]
    assert reg.resolve("ds:v2").aliases == ("latest",)
    assert reg.resolve("ds:v1").aliases == ()
    assert reg.list() == ["ds"]


def test_by_reference_path_is_the_source(reg, payload):
    reg.publish("ds", payload)
    art = reg.resolve("ds:v1")
    assert art.path == str(payload.resolve())
    assert [a.path for a in reg.versions("ds")] == [str(payload.resolve())]


def test_same_content_twice_is_two_versions(reg, payload):
    """W&B keeps one version per content digest; the backend makes each publish distinct."""
    reg.publish("ds", payload, copy=True)
    reg.publish("ds", payload, copy=True)
    assert [a.version for a in reg.versions("ds")] == [1, 2]


def test_copy_is_independent_of_the_source(reg, payload):
    reg.publish("ds", payload, copy=True)
    (payload / "blend.json").write_text("changed")
    art = reg.resolve("ds:latest")
    assert Path(art.path, "blend.json").read_text() == '{"train": ["1.0", "x"]}'
    assert Path(art.path, "shards", "a.bin").read_bytes() == b"\x00\x01\x02"


def test_aliases_set_move_and_resolve(reg, payload):
    reg.publish("ds", payload, aliases=("latest", "tiny"))
    reg.publish("ds", payload)
    assert reg.resolve("ds:tiny").version == 1
    assert reg.resolve("ds:v1").aliases == ("tiny",)
    assert reg.set_alias("ds:v1", "prod").aliases == ("prod", "tiny")
    assert reg.resolve("ds:prod").version == 1
    reg.set_alias("ds:latest", "prod")  # an alias names one version: it moves
    assert reg.resolve("ds:prod").version == 2
    assert reg.resolve("ds:v1").aliases == ("tiny",)
    assert reg.resolve("ds:v2").aliases == ("latest", "prod")


def test_unknown_name_version_and_alias(reg, payload):
    reg.publish("nano3-pretrain-data-tiny", payload, aliases=("latest", "prod"))
    with pytest.raises(ArtifactNotFoundError, match="did you mean 'nano3-pretrain-data-tiny'"):
        reg.resolve("nano3-pretrain-data-tin")
    with pytest.raises(ArtifactVersionNotFoundError, match=r"no version v7 .*available: v1"):
        reg.resolve("nano3-pretrain-data-tiny:v7")
    with pytest.raises(ArtifactVersionNotFoundError, match="no alias 'prd'.*did you mean 'prod'"):
        reg.resolve("nano3-pretrain-data-tiny:prd")


def test_invalid_alias_publishes_nothing(reg, payload):
    with pytest.raises(ArtifactPublishError, match="invalid alias"):
        reg.publish("ds", payload, aliases=("latest", "v2"))
    with pytest.raises(ArtifactNotFoundError):
        reg.resolve("ds")


def test_unserializable_metadata_publishes_nothing(reg, payload):
    with pytest.raises(ArtifactPublishError, match="not JSON-serializable"):
        reg.publish("ds", payload, metadata={"when": object()})
    with pytest.raises(ArtifactNotFoundError):
        reg.resolve("ds")
