"""Artifact references and records (artifacts/refs.py): parse_ref's forms and errors, selectors, a minimal record's defaults, plain data with the ref."""

from __future__ import annotations

from pathlib import Path

import pytest

from nemo_runspec.artifacts.errors import (
    ArtifactError,
)
from nemo_runspec.artifacts.refs import Artifact, parse_ref, version_number
from nemo_runspec.artifacts.registry import (
    ArtifactRegistry,
)
from tests.nemo_runspec.artifacts.test_registry_contract_mutants import _record


def test_a_minimal_record_reads_with_defaults(tmp_path: Path) -> None:
    art = _record(tmp_path, path="/data").resolve("ds")
    assert art == Artifact(name="ds", version=1, path="/data", metadata={}, aliases=(), created="",
                           backend="fsspec")


def test_selectors(tmp_path: Path, payload: Path) -> None:
    reg = ArtifactRegistry(tmp_path / "r")
    for _ in range(3):
        reg.publish("ds", payload, aliases=())
    assert reg.resolve("ds").version == 3          # no 'latest' alias: the highest version
    reg.set_alias("ds:v1", "latest")
    assert reg.resolve("ds:latest").version == 1   # an explicit 'latest' wins
    assert reg.resolve("ds:V2").version == 2 and reg.resolve("ds:2").version == 2
    assert version_number("V7") == 7 and version_number("v7") == 7 and version_number("7") == 7
    assert version_number("Vx") is None and version_number("best") is None


@pytest.mark.parametrize(("ref", "parsed"), [
    ("ds", ("ds", "latest")),
    (" ds:v2 ", ("ds", "v2")),
    ("art://ds:v2", ("ds", "v2")),
    ("art://ds:v2/a/b", ("ds", "v2")),
])
def test_parse_ref(ref: str, parsed: tuple[str, str]) -> None:
    assert parse_ref(ref) == parsed


@pytest.mark.parametrize("ref", [":v1", "-ds", "d s"])
def test_a_bad_reference_says_the_form(ref: str) -> None:
    with pytest.raises(ArtifactError) as info:
        parse_ref(ref)
    assert info.value.problem == f"invalid artifact reference {ref!r}"
    assert info.value.hint == "use name[:version|alias], e.g. nano3-pretrain-data-tiny:latest or :v3"


def test_to_dict_is_plain_data_with_the_ref() -> None:
    art = Artifact(name="ds", version=2, path="/p", metadata={"a": 1}, aliases=("x",), created="t")
    assert art.to_dict() == {"name": "ds", "version": 2, "path": "/p", "metadata": {"a": 1},
                             "aliases": ["x"], "created": "t", "backend": "fsspec", "ref": "ds:v2"}
