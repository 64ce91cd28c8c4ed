"""`sbatch_options` (docs/env-toml.md, "The raw sbatch escape hatch"): options nemotron
sets itself are refused, options with a profile key of their own name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from nemo_runspec import env as envmod


def _load(tmp_path: Path, options: str) -> envmod.EnvProfile:
    path = tmp_path / "env.toml"
    path.write_text(f'[c]\nexecutor = "slurm"\naccount = "a"\nsbatch_options = {{ {options} }}\n')
    return envmod.load_env_profile("c", path)


@pytest.mark.parametrize("option", ["output", "error", "dependency", "open-mode", "--output"])
def test_options_nemotron_sets_itself_are_refused(tmp_path: Path, option: str) -> None:
    with pytest.raises(envmod.EnvFileError, match=f"sbatch option '{option}' is managed by nemotron; "
                                                  "remove it") as info:
        _load(tmp_path, f'"{option}" = "x"')
    assert info.value.line == 4


@pytest.mark.parametrize(("option", "key"), [("partition", "partition"), ("p", "partition"),
                                             ("ntasks", "ntasks_per_node"), ("gpus", "gpus_per_node"),
                                             ("A", "account"), ("exclusive", "exclusive")])
def test_options_with_a_key_of_their_own_name_it(tmp_path: Path, option: str, key: str) -> None:
    with pytest.raises(envmod.EnvFileError, match=f"set the profile key '{key}' instead"):
        _load(tmp_path, f'"{option}" = "1"')


@pytest.mark.parametrize("option", ["outp", "dep", "part", "open-m", "exclus"])
def test_abbreviations_of_managed_options_are_refused(tmp_path: Path, option: str) -> None:
    with pytest.raises(envmod.EnvFileError, match="managed by nemotron"):
        _load(tmp_path, f'"{option}" = "x"')


@pytest.mark.parametrize("option", ["gpu-bind", "mail-type", "cpus-per-gpu", "signal", "reservation"])
def test_other_sbatch_options_pass(tmp_path: Path, option: str) -> None:
    assert _load(tmp_path, f'"{option}" = "x"').values["sbatch_options"] == {option: "x"}
