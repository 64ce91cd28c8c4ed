"""Pinned inputs (artifacts/pins.py): ``:latest`` replaced by the version a pipe's job was given,
a pipe's own output found by its id and key, an exact version never re-pinned; on a real registry."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from nemo_runspec.artifacts import pins
from nemo_runspec.artifacts.errors import ArtifactError
from nemo_runspec.artifacts.registry import ArtifactRegistry


@pytest.fixture
def reg(tmp_path):
    r = ArtifactRegistry(str(tmp_path / "registry"))
    data = tmp_path / "data"
    data.mkdir()
    r.publish("ds", str(data), metadata={"pipe_id": "p1", "pipe_key": "k1"})
    r.publish("ds", str(data), metadata={"pipe_id": "p2", "pipe_key": "k2"})
    r.publish("ds", str(data))
    return r


def test_pins_come_from_the_environment_as_json():
    assert pins.from_env({}) == {}
    assert pins.from_env({pins.PINS_ENV: json.dumps({"ds": "v1"})}) == {"ds": "v1"}
    for bad in ("[1]", '{"ds": 3}', "{"):
        with pytest.raises(ArtifactError) as e:
            pins.from_env({pins.PINS_ENV: bad})
        assert e.value.key == pins.PINS_ENV


def test_the_pipe_slot_is_filled_with_the_pipe_id():
    assert pins.for_pipe({"ds": "pipe:{pipe}:k", "m": "v2"}, "abc") == {"ds": "pipe:abc:k", "m": "v2"}


def test_resolve_follows_the_pin_and_remembers_what_was_consumed(reg):
    assert reg.resolve("ds:latest").version == 3
    assert pins.resolve(reg, "ds:latest", {"ds": "v1"}).version == 1
    assert pins.resolve(reg, "ds:latest", {"ds": "pipe:p2:k2"}).version == 2
    assert pins.resolve(reg, "ds:v3", {"ds": "v1"}).version == 3  # an exact version is never re-pinned
    assert pins.resolve(reg, "ds", {}).version == 3
    assert pins.consumed()["ds:latest"] == "ds:v2"


def test_a_pipe_pin_without_its_version_says_the_stage_must_finish_first(reg):
    with pytest.raises(ArtifactError) as e:
        pins.resolve(reg, "ds:latest", {"ds": "pipe:p9:k"})
    assert "the stage of pipe p9 that makes it has published no version" in str(e.value)


def test_stage_pins_of_producers_that_run_are_skipped_or_outside():
    def stage(publishes, skip=False, key="key", output=None):
        return SimpleNamespace(publishes=publishes, skip=skip, key=key, output=output)

    earlier = [stage("pre", key="kp"), stage("sft", skip=True, output="sft:v7"), stage("pre", key="kp2")]
    outside = SimpleNamespace(version=4)
    got = pins.stage_pins({"a": "pre:latest", "b": "sft", "c": "tok:latest"}, earlier, resolve=lambda ref: outside)
    assert got == {"pre": "pipe:{pipe}:kp2", "sft": "v7", "tok": "v4"}
    assert pins.stage_pins({"c": "tok"}, [], resolve=lambda ref: outside, pin_inputs=False) == {}


def test_a_requeued_attempt_reads_what_the_first_attempt_resolved(reg, tmp_path, monkeypatch):
    """A job Slurm requeues must go on with the data it started with: ``:latest`` is
    resolved once and recorded in the pin file its attempts share."""
    pin_file = tmp_path / "job" / ".artifact-pins-17.json"
    pin_file.parent.mkdir()
    monkeypatch.setenv(pins.PIN_FILE_ENV, str(pin_file))
    monkeypatch.delenv(pins.PINS_ENV, raising=False)
    assert pins.resolve(reg, "ds:latest").version == 3  # the first attempt
    assert json.loads(pin_file.read_text()) == {"ds:latest": "ds:v3"}
    reg.publish("ds", str(tmp_path / "data"))  # v4, published while the job waits in the queue again
    assert pins.resolve(reg, "ds:latest").version == 3  # the requeued attempt
    assert pins.resolve(reg, "ds:v4").version == 4  # an exact version is never re-pinned
    assert pins.resolve(reg, "ds").version == 3  # the bare name is ds:latest
    assert json.loads(pin_file.read_text()) == {"ds:latest": "ds:v3"}
    monkeypatch.delenv(pins.PIN_FILE_ENV)
    assert pins.resolve(reg, "ds:latest").version == 4  # another job: latest now
    monkeypatch.setenv(pins.PIN_FILE_ENV, str(pin_file))
    pin_file.write_text("{half")
    with pytest.raises(ArtifactError, match="NEMOTRON_ARTIFACT_PIN_FILE"):
        pins.resolve(reg, "ds:latest")
