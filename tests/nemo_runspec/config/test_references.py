"""Shell references in a recipe config (config/references.py): a ${VAR} or $VAR a shell would expand is one line naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from nemo_runspec.errors import ConfigError


def test_a_shell_reference_in_a_recipe_config_is_one_line(tmp_path: Path) -> None:
    from nemo_runspec.config.references import check_key_references

    cfg = OmegaConf.create({"model": {"note": "${HOME}/x", "ok": "\\${HOME}", "ref": "${model.ok}"}})
    with pytest.raises(ConfigError) as exc:
        check_key_references(cfg, ["+model.note=${HOME}/x"])
    assert str(exc.value) == ("key 'model.note' in override '+model.note=${HOME}/x': ${HOME} refers to a config key "
                              "'HOME', which does not exist (an environment variable of the job is ${oc.env:HOME}; "
                              "the text ${HOME} itself is \\${HOME})")
    check_key_references(OmegaConf.create({"HOME": 1, "x": "${HOME}"}))  # a real top-level key is fine
