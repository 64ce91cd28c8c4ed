"""A payload directory the artifact tests publish: a file and a sub-directory, in a path with a space."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def payload(tmp_path: Path) -> Path:
    d = tmp_path / "out dir"
    (d / "shards").mkdir(parents=True)
    (d / "blend.json").write_text('{"train": 1}')
    (d / "shards" / "a.bin").write_bytes(b"\x00\x01" * 1000)
    return d
