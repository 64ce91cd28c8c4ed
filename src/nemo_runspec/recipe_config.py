"""RecipeConfig: the normalised command line of one recipe command."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nemo_runspec.cli_context import GlobalContext, Mode, split_unknown_args

if TYPE_CHECKING:
    import typer


@dataclass
class RecipeConfig:
    """Everything a recipe command needs to know about how it was invoked.

    ``ctx`` is the :class:`GlobalContext` with ``overrides`` and ``passthrough``
    filled in (pass it to ``parse_config``/``build_job_config``); the other fields
    are shortcuts to it.
    """

    ctx: GlobalContext
    mode: Mode
    attached: bool
    profile: str | None
    dry_run: bool
    force_squash: bool
    overrides: list[str] = field(default_factory=list)
    passthrough: list[str] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    config: str | None = None


def recipe_config_from(gctx: GlobalContext, extra_args: list[str]) -> RecipeConfig:
    """Build a :class:`RecipeConfig` from the global context and the unparsed words.

    ``extra_args`` (what Typer left in ``ctx.args``) are split into overrides and
    script arguments; words that came after ``--`` (already in
    ``gctx.passthrough``) always pass through, after the others.
    """
    overrides, passthrough = split_unknown_args(list(extra_args))
    _refuse_profile_as_argument(passthrough, gctx)
    if gctx.force_squash:
        import sys

        # Accepted for compatibility with upstream Nemotron; this version never
        # squashes: pyxis imports the image itself when the job starts.
        print("warning: --force-squash has no effect: this version does not squash container "
              "images (pyxis pulls the image when the job starts)", file=sys.stderr)
    full = dataclasses.replace(
        gctx,
        overrides=[*gctx.overrides, *overrides],
        passthrough=[*passthrough, *gctx.passthrough],
        argv=list(gctx.argv),
    )
    return RecipeConfig(
        ctx=full,
        mode=full.mode,
        attached=full.attached,
        profile=full.profile,
        dry_run=full.dry_run,
        force_squash=full.force_squash,
        overrides=list(full.overrides),
        passthrough=list(full.passthrough),
        argv=list(full.argv),
        config=full.config,
    )


def _refuse_profile_as_argument(words: list[str], gctx: GlobalContext) -> None:
    """A bare word naming an env.toml profile is almost surely a forgotten ``--run``:
    the job would run here instead of on the cluster. (After ``--`` it passes.)"""
    bare = [w for w in words if not w.startswith("-")]
    if not bare:
        return
    from nemo_runspec.help import list_profiles

    names = {name for name, _executor in list_profiles(gctx.env_file).profiles}
    for word in bare:
        if word in names:
            from nemo_runspec.errors import CLIUsageError

            raise CLIUsageError(
                f"unexpected argument {word!r}: it is an env.toml profile",
                hint=f"to run on it use --run {word} (or --batch {word}); "
                     f"to pass {word!r} to the script put it after --",
            )


def parse_recipe_config(ctx: typer.Context) -> RecipeConfig:
    """The :class:`RecipeConfig` of the running recipe command.

    Reads the :class:`GlobalContext` stored in ``ctx.obj`` by the main app (an
    empty one when the command is invoked on its own) and the words Typer did not
    consume (``ctx.args``).
    """
    root = ctx.find_root()
    gctx = root.obj if isinstance(root.obj, GlobalContext) else None
    if gctx is None:
        gctx = ctx.obj if isinstance(ctx.obj, GlobalContext) else GlobalContext()
    return recipe_config_from(gctx, list(ctx.args))
