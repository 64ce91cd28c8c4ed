"""Artifact lookup errors (exceptions.py): the reference's names, each one of our one-line errors
and a LookupError, so code written for the reference catches them as it did."""

from __future__ import annotations

import pytest

from nemo_runspec.artifacts.errors import (
    ArtifactError,
    ArtifactNotFoundError,
    ArtifactPublishError,
    ArtifactVersionNotFoundError,
)
from nemo_runspec.errors import NemoRunspecError


@pytest.mark.parametrize("cls", [ArtifactNotFoundError, ArtifactVersionNotFoundError, ArtifactPublishError])
def test_each_is_an_artifact_error_a_lookup_error_and_ours(cls):
    with pytest.raises(LookupError) as e:
        raise cls("no such artifact 'x'", key="x", hint="nemotron jobs artifacts")
    assert isinstance(e.value, ArtifactError) and isinstance(e.value, NemoRunspecError)
    assert str(e.value) == "no such artifact 'x' (nemotron jobs artifacts)"


def test_the_kinds_are_told_apart():
    assert not issubclass(ArtifactNotFoundError, ArtifactVersionNotFoundError)
    assert not issubclass(ArtifactPublishError, ArtifactNotFoundError)
