"""RecipeTyper: a Typer app that registers recipe commands with rich help panels."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

#: Context settings every recipe command uses: unknown words (overrides, script
#: arguments) are left in ``ctx.args`` and ``-h`` works like ``--help``.
RECIPE_CONTEXT_SETTINGS: dict[str, Any] = {
    "allow_extra_args": True,
    "ignore_unknown_options": True,
    "help_option_names": ["-h", "--help"],
}


class FastHelpMixin:
    """Give the help option a ``False`` default instead of ``None``.

    Typer coerces every non-bool parameter value through pydantic; an absent
    ``--help`` is ``None``, so without this any invocation of a group imports
    pydantic (~40 ms), which the ``--help`` path must not.
    """

    def get_help_option(self, ctx: Any) -> Any:
        """The help option, with a boolean default."""
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None and option.default is None:
            option.default = False
        return option


class FastHelpCommand(FastHelpMixin, TyperCommand):
    """A :class:`TyperCommand` with :class:`FastHelpMixin`."""


class FastHelpGroup(FastHelpMixin, TyperGroup):
    """A :class:`TyperGroup` with :class:`FastHelpMixin` and a light help page."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """Print :func:`nemo_runspec.help.render_group_help` (no Markdown import)."""
        from nemo_runspec.help import render_group_help

        render_group_help(self, ctx)


@dataclass(frozen=True)
class RecipeMeta:
    """What a recipe command's ``--help`` shows about its recipe.

    Attributes:
        name: command name (``pretrain``); a recipe name such as ``nano3/pretrain``
            is accepted, the last part becomes the command name.
        script_path: absolute path of the recipe script.
        config_dir: absolute path of its config directory (``*.yaml`` are listed).
        default_config: name of the config used without ``-c``.
        input_artifacts: artifact name -> description of what the recipe consumes.
        output_artifacts: artifact name -> description of what it produces.
        examples: command lines shown under "Examples".
        description: one paragraph shown under the usage line.
    """

    name: str
    script_path: Path
    config_dir: Path
    default_config: str = "default"
    input_artifacts: dict[str, str] = field(default_factory=dict)
    output_artifacts: dict[str, str] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)
    description: str = ""

    @property
    def command_name(self) -> str:
        """The last part of :attr:`name`, used as the CLI command name."""
        return self.name.rsplit("/", 1)[-1]


class RecipeTyper(typer.Typer):
    """A :class:`typer.Typer` with :meth:`add_recipe_command`.

    Recipe commands accept extra words (overrides and script arguments), take
    ``-h``/``--help`` and render the recipe help panels from :mod:`nemo_runspec.help`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("cls", FastHelpGroup)
        kwargs.setdefault("no_args_is_help", True)
        kwargs.setdefault("add_completion", False)
        kwargs.setdefault("context_settings", {"help_option_names": ["-h", "--help"]})
        super().__init__(*args, **kwargs)

    def add_recipe_command(
        self,
        func: Callable[..., Any],
        *,
        meta: RecipeMeta,
        rich_help_panel: str | None = None,
        name: str | None = None,
    ) -> Callable[..., Any]:
        """Register ``func`` (taking a ``typer.Context``) as a recipe command.

        The command is named ``name`` or ``meta.command_name``; its help text is
        ``meta.description`` (or the function docstring) plus the recipe panels.
        """
        from nemo_runspec.help import recipe_command_class

        help_text = meta.description or (func.__doc__ or "").strip()
        return self.command(
            name=name or meta.command_name,
            cls=recipe_command_class(meta),
            context_settings=dict(RECIPE_CONTEXT_SETTINGS),
            help=help_text,
            rich_help_panel=rich_help_panel,
        )(func)

    def add_failed_command(
        self, name: str, error: BaseException | str, *, rich_help_panel: str | None = None
    ) -> None:
        """Register a stub ``name`` for a command whose module failed to import.

        Its help says ``failed to load: <error>``; invoking it exits 1 with that
        message, so a broken command never silently disappears.
        """
        message = f"failed to load: {error}"

        def failed(ctx: typer.Context) -> None:
            from nemo_runspec.errors import ExecutionError

            raise ExecutionError(f"'{ctx.command_path}' {message}")

        failed.__doc__ = message
        self.command(
            name=name,
            help=message,
            cls=FastHelpCommand,
            context_settings=dict(RECIPE_CONTEXT_SETTINGS),
            rich_help_panel=rich_help_panel,
        )(failed)
