"""RecipeConfig: the normalised command line of one recipe command."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nemo_runspec.cmdline.context import (
    GlobalContext,
    Mode,
    merge_late_globals,
    split_global_args,
    split_unknown_args,
)

if TYPE_CHECKING:
    import typer


@dataclass
class RecipeConfig:
    """Everything a recipe command needs to know about how it was invoked.

    ``ctx`` is the :class:`GlobalContext` with ``overrides`` and ``passthrough``
    filled in (pass it to ``parse_config``/``build_job_config``); the other fields
    are shortcuts to it. Its typed form is a :class:`~nemo_runspec.job.run_config.RunConfig`
    (``RunConfig.from_recipe_config(cfg)``, ``run.recipe_config()``).
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
    bare_words: list[str] = field(default_factory=list)
    """Script arguments given before ``--`` that are plain words; one naming an
    env.toml profile is refused by :func:`nemo_runspec.job.compiled.compile_job` (a
    forgotten ``--run``)."""


def recipe_config_from(gctx: GlobalContext, extra_args: list[str]) -> RecipeConfig:
    """Build a :class:`RecipeConfig` from the global context and the unparsed words.

    ``extra_args`` (what Typer left in ``ctx.args``) are split into overrides and
    script arguments; words that came after ``--`` (already in
    ``gctx.passthrough``) always pass through, after the others.

    Late globals (the reference's ``pretrain x=1 --run dev -d``, as a Typer app of
    your own leaves them in ``ctx.args``) are taken out and set on the returned
    context, as :func:`~nemo_runspec.cmdline.context.split_unknown_args` does with a
    context; ``gctx`` itself is not changed.
    """
    full = dataclasses.replace(gctx, argv=list(gctx.argv), recipe_dirs=list(gctx.recipe_dirs))
    late, rest = split_global_args(list(extra_args))
    merge_late_globals(full, late)
    overrides, passthrough = split_unknown_args(rest)
    full = dataclasses.replace(
        full,
        overrides=[*gctx.overrides, *overrides],
        passthrough=[*passthrough, *late.passthrough, *gctx.passthrough],
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
        bare_words=[w for w in passthrough if not w.startswith("-")],
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
