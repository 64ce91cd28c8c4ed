"""Rich help panels for recipe commands.

:class:`RecipeCommand` replaces Typer's help page for a recipe with: usage, the
available configs, the env.toml profiles, artifacts, override syntax, global
options and examples. It only reads small local files (config dir listing,
env.toml with :mod:`tomllib`) so ``--help`` stays fast: no pydantic, OmegaConf or
nemo-run here.
"""

from __future__ import annotations

import os
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typer.core import TyperCommand, TyperGroup

from nemo_runspec.cli.context import GLOBAL_OPTIONS, GlobalContext
from nemo_runspec.env.discovery import (
    ENV_FILE_NAME,
    ENV_FILE_VAR,
    as_env_file,
    explicit_env_file,
    search_dirs,
)

if TYPE_CHECKING:
    import click
    from rich.console import Console

    from nemo_runspec.cli.meta import RecipeMeta

#: env.toml top-level tables that are not executor profiles.
SPECIAL_SECTIONS = frozenset({"wandb", "cli", "cache", "artifacts"})

OVERRIDE_SYNTAX: tuple[tuple[str, str], ...] = (
    ("key=value", "set an existing config key (typos are errors)"),
    ("+key=value", "add a new key"),
    ("++key=value", "add or replace a key"),
    ("~key", "delete a key"),
    ("run.env.KEY=value", "override an execution setting (highest precedence)"),
    ("--flag value", "anything else is passed to the script"),
    ("-- args...", "everything after -- is passed to the script verbatim"),
)


@dataclass
class ProfileListing:
    """What ``--help`` shows about env.toml profiles."""

    path: Path | None
    looked_in: list[str] = field(default_factory=list)
    profiles: list[tuple[str, str]] = field(default_factory=list)  # (name, executor)
    error: str | None = None



#: The packager line of a recipe's help: where our default differs from the reference's.
PACKAGER_HELP = (
    "packager: the profile's `packager` key, else the recipe's default: code (the working tree, "
    "diff recorded) or self_contained (script + config), not the reference's git: git ships committed "
    "files only, so an edit you tested locally would silently not run (docs/migrating-from-reference.md)"
)

def discover_env_file(explicit: str | os.PathLike[str] | None = None) -> tuple[Path | None, list[str]]:
    """The env.toml :func:`nemo_runspec.env.find_env_file` would use, and where it looked.

    Never raises: a named file that does not exist is returned as it is (the
    listing then reports it). Returns the path (None if absent) and the places
    looked at, for the help text.
    """
    named = explicit_env_file(explicit)
    if named is not None:
        value, origin = named
        shown = f"--env-file {value}" if origin == "--env-file" else f"{ENV_FILE_VAR}={value}"
        return as_env_file(value), [shown]
    looked = [str(folder / ENV_FILE_NAME) for folder in search_dirs(Path.cwd().absolute())]
    for candidate in looked:
        if Path(candidate).is_file():
            return Path(candidate), looked
    return None, looked


def list_profiles(explicit: str | os.PathLike[str] | None = None) -> ProfileListing:
    """The profiles of the discovered env.toml and their executors; never raises."""
    path, looked = discover_env_file(explicit)
    listing = ProfileListing(path=path, looked_in=looked)
    if path is None:
        return listing
    if path.exists() and not path.is_file():
        listing.error = f"{path}: not a regular file"  # a FIFO would block the read
        return listing
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        listing.error = f"{path}: file not found"
        return listing
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        listing.error = f"{path}: {exc}"
        return listing
    tables = {k: v for k, v in data.items() if isinstance(v, dict) and k not in SPECIAL_SECTIONS}
    for name in tables:
        listing.profiles.append((name, _executor_of(name, tables)))
    return listing


def _executor_of(name: str, tables: dict[str, dict[str, Any]]) -> str:
    seen: set[str] = set()
    current: str | None = name
    while current is not None and current not in seen and current in tables:
        seen.add(current)
        table = tables[current]
        if "executor" in table:
            return str(table["executor"])
        parent = table.get("extends")
        current = parent if isinstance(parent, str) else None
    return "local"


def list_configs(config_dir: Path) -> list[str]:
    """Names (without ``.yaml``) of the configs directly in ``config_dir``."""
    try:
        return sorted(p.stem for p in config_dir.iterdir() if p.suffix in (".yaml", ".yml"))
    except OSError:
        return []


def render_recipe_help(meta: RecipeMeta, command_path: str, console: Console, *, env_file: str | None = None) -> None:
    """Print the help page of the recipe ``meta`` invoked as ``command_path``."""
    from rich.padding import Padding
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    def panel(title: str, body: Any) -> None:
        console.print(Panel(body, title=title, title_align="left", border_style="dim"))

    def grid() -> Table:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        return table

    usage = f"{command_path} [GLOBAL OPTIONS] [OVERRIDES...] [SCRIPT ARGS...] [-- ARGS...]"
    console.print(Padding(Text(f"Usage: {usage}", style="bold"), (1, 1, 0, 1)))
    if meta.description:
        console.print(Padding(Text(meta.description), (1, 1, 1, 1)))
    else:
        console.print()

    configs = grid()
    names = list_configs(meta.config_dir)
    for name in names:
        configs.add_row(Text(name), "(default)" if name == meta.default_config else "")
    if not names:
        configs.add_row("-", f"no *.yaml in {meta.config_dir}")
    configs.add_row("", Text(f"-c NAME, or -c path/to/file.yaml; dir: {meta.config_dir}", style="dim"))
    panel("Configs", configs)

    listing = list_profiles(env_file)
    profiles = grid()
    if listing.error:
        profiles.add_row("error", Text(listing.error, style="red"))
    elif listing.path is None:
        profiles.add_row("none", Text("no env.toml found; looked in: " + ", ".join(listing.looked_in)))
    else:
        for name, executor in listing.profiles:
            profiles.add_row(Text(name), Text(f"executor={executor}"))
        if not listing.profiles:
            profiles.add_row("none", "no profiles defined")
        profiles.add_row("", Text(f"from {listing.path}; use --run PROFILE or --batch PROFILE", style="dim"))
    profiles.add_row("", Text(PACKAGER_HELP, style="dim"))
    panel("Env profiles", profiles)

    if meta.input_artifacts or meta.output_artifacts:
        artifacts = grid()
        for name, text in meta.input_artifacts.items():
            artifacts.add_row(Text(f"in  {name}"), Text(text))
        for name, text in meta.output_artifacts.items():
            artifacts.add_row(Text(f"out {name}"), Text(text))
        panel("Artifacts", artifacts)

    overrides = grid()
    for syntax, text in OVERRIDE_SYNTAX:
        overrides.add_row(syntax, text)
    panel("Overrides", overrides)

    render_global_options(console)

    if meta.examples:
        examples = Table.grid()
        examples.add_column()
        for example in meta.examples:
            examples.add_row(Text(example, style="green"))
        panel("Examples", examples)


def render_global_options(console: Console | None = None) -> None:
    """Print the "Global options" panel (shared by every help page)."""
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    console = console or _console()
    options = Table.grid(padding=(0, 2))
    options.add_column(style="bold cyan", no_wrap=True)
    options.add_column()
    for spelling, _, text in GLOBAL_OPTIONS:
        options.add_row(spelling, text)
    options.add_row("-h, --help", "Show this message and exit")
    options.add_row("", Text("global options may go before or after the command, not after --", style="dim"))
    console.print(Panel(options, title="Global options", title_align="left", border_style="dim"))


def render_group_help(group: Any, ctx: click.Context, console: Console | None = None) -> None:
    """Help page of a command group: usage, description, commands by panel, options.

    A light replacement for Typer's rich help (which imports Markdown support,
    ~50 ms) so that ``nemotron --help`` stays within its startup budget.
    """
    from rich.padding import Padding
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    console = console or _console()
    console.print(Padding(Text(f"Usage: {ctx.command_path} [OPTIONS] COMMAND [ARGS]...", style="bold"), (1, 1, 0, 1)))
    text = (group.help or "").strip()
    console.print(Padding(Text(text), (1, 1, 1, 1)) if text else "")

    panels: dict[str, list[tuple[str, str]]] = {}
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or getattr(command, "hidden", False):
            continue
        title = getattr(command, "rich_help_panel", None) or "Commands"
        short = (command.short_help or (command.help or "").strip().split("\n")[0]).strip()
        panels.setdefault(title, []).append((name, short))
        if short.startswith("failed to load"):
            print(f"warning: '{ctx.command_path} {name}' {short}", file=sys.stderr)
    for title, rows in panels.items():
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        for name, short in rows:
            table.add_row(Text(name), Text(short))
        console.print(Panel(table, title=title, title_align="left", border_style="dim"))
    names = ", ".join(ctx.help_option_names) or "--help"
    options = Table.grid(padding=(0, 2))
    options.add_column(style="bold cyan", no_wrap=True)
    options.add_column()
    options.add_row(names, "Show this message and exit")
    console.print(Panel(options, title="Options", title_align="left", border_style="dim"))


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False)


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
    """A :class:`TyperGroup` with :class:`FastHelpMixin`, a light help page, and
    commands whose module is imported on first lookup (``resolve_lazy``, see
    :meth:`~nemo_runspec.cli.recipe_typer.RecipeTyper.add_command_module`)."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command ``cmd_name``, loading its module first if it was registered lazily."""
        command = super().get_command(ctx, cmd_name)
        resolve = getattr(command, "resolve_lazy", None)
        if resolve is not None:
            command = resolve()
            self.commands[cmd_name] = command
        return command

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """Print :func:`render_group_help` (no Markdown import)."""
        render_group_help(self, ctx)


class RecipeCommand(FastHelpMixin, TyperCommand):
    """A Typer command whose help page is :func:`render_recipe_help` of :attr:`meta`."""

    meta: RecipeMeta

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Print the recipe help panels (directly, like Typer's rich help)."""
        root = ctx.find_root().obj
        env_file = root.env_file if isinstance(root, GlobalContext) else None
        render_recipe_help(self.meta, ctx.command_path, _console(), env_file=env_file)


def recipe_command_class(meta: RecipeMeta) -> type[RecipeCommand]:
    """A :class:`RecipeCommand` subclass bound to ``meta`` (Typer instantiates it)."""
    return type(f"RecipeCommand_{meta.command_name}", (RecipeCommand,), {"meta": meta})
