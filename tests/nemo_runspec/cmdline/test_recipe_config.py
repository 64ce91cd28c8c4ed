"""RecipeConfig (cli/recipe_config.py) converts to and from a RunConfig both ways."""

from __future__ import annotations

import pytest

from nemo_runspec.job.run_config import RunConfig
from tests.nemo_runspec.job.test_run_config import make_spec


@pytest.fixture
def spec(tmp_path, monkeypatch):
    return make_spec(tmp_path, monkeypatch)


def test_recipe_config_converts_both_ways(spec) -> None:
    from nemo_runspec.cmdline.context import split_global_args
    from nemo_runspec.cmdline.recipe_config import RecipeConfig, recipe_config_from

    gctx, rest = split_global_args(["-c", "tiny", "--run", "dev", "steps=4", "--", "--x"])
    cli = recipe_config_from(gctx, rest)
    assert cli.run_config == RunConfig(profile="dev", config="tiny", overrides=("steps=4",), passthrough=("--x",))
    back = RecipeConfig.from_run_config(cli.run_config)
    assert (back.mode, back.profile, back.overrides, back.passthrough) == ("run", "dev", ["steps=4"], ["--x"])
