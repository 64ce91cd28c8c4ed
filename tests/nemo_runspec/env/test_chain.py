"""The extends chain of env.toml profiles (env/chain.py): a 1000-deep chain reads each table once."""

from __future__ import annotations

from pathlib import Path

import pytest

from nemo_runspec.env import load_env_file, load_env_profile
from tests.nemotron.cli.test_inputs_limits import _deep


def test_a_1000_deep_chain_reads_each_table_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nemo_runspec.env import chain as env_chain

    calls: list[str] = []
    real = env_chain.validate_layer
    monkeypatch.setattr(env_chain, "validate_layer", lambda layer, ef, prof, renames: (calls.append(prof),
                                                                                      real(layer, ef, prof, renames)))
    ef = load_env_file(_deep(tmp_path / "env.toml", 1000))
    profiles = [load_env_profile(name, ef) for name in ef.profiles]
    assert len(calls) == 1000 and len(set(calls)) == 1000  # once per table, not once per descendant
    deepest = profiles[-1]
    assert len(deepest.chain) == 1000 and deepest.values["account"] == "a"
    assert deepest.sources["account"].profile == "p0"
