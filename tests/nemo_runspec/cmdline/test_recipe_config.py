"""RecipeConfig (cmdline/recipe_config.py): the words of one recipe command sorted into the
global context, overrides and script arguments. Its conversions to and from a RunConfig are
in job/test_run_config.py."""

from __future__ import annotations

from nemo_runspec.cmdline.context import GlobalContext, split_global_args
from nemo_runspec.cmdline.recipe_config import recipe_config_from


def test_the_words_are_sorted_into_overrides_and_script_arguments() -> None:
    gctx, rest = split_global_args(["-c", "tiny", "--run", "dev", "steps=4", "--", "--x"])
    cli = recipe_config_from(gctx, rest)
    assert (cli.mode, cli.profile, cli.config, cli.overrides, cli.passthrough) == (
        "run", "dev", "tiny", ["steps=4"], ["--x"])
    assert cli.ctx.overrides == ["steps=4"] and cli.bare_words == []


def test_late_global_options_are_taken_out_and_the_given_context_is_left_alone() -> None:
    gctx = GlobalContext()
    cli = recipe_config_from(gctx, ["x=1", "--batch", "dev", "-d", "word"])
    assert (cli.mode, cli.profile, cli.dry_run, cli.overrides) == ("batch", "dev", True, ["x=1"])
    assert cli.passthrough == ["word"] and cli.bare_words == ["word"]  # refused by compile_job if a profile
    assert (gctx.mode, gctx.profile, gctx.overrides) == ("local", None, [])
