"""Help pages of recipe commands and command groups.

:class:`RecipeCommand` replaces Typer's help page for a recipe with: usage, the
available configs, the env.toml profiles, artifacts, override syntax, global
options and examples; :class:`FastHelpGroup` a group's with its commands by
panel. It only reads small local files (config dir listing, env.toml with
:mod:`tomllib`) so ``--help`` stays fast: no pydantic, OmegaConf or nemo-run
here. The pages are blocks of :mod:`nemo_runspec.cli.panels`, which prints them
as rich would, usually without importing rich.
"""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typer.core import TyperCommand, TyperGroup

from nemo_runspec.cli.panels import Blank, Block, Cell, Panel, Para, print_blocks, rich_renderables
from nemo_runspec.cmdline.context import GLOBAL_OPTIONS, GlobalContext
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
    from nemo_runspec.errors import EnvFileError
    from nemo_runspec.files import read_text

    try:
        data = tomllib.loads(read_text(path, what="env file", error=EnvFileError))
    except EnvFileError as exc:
        listing.error = str(exc)
        return listing
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
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


def recipe_help_blocks(meta: RecipeMeta, command_path: str, *, env_file: str | None = None) -> list[Block]:
    """The help page of the recipe ``meta`` invoked as ``command_path``."""
    usage = f"{command_path} [GLOBAL OPTIONS] [OVERRIDES...] [SCRIPT ARGS...] [-- ARGS...]"
    blocks: list[Block] = [Para(f"Usage: {usage}", "bold")]
    blocks.append(Para(meta.description, padding=(1, 1, 1, 1)) if meta.description else Blank())

    names = list_configs(meta.config_dir)
    configs: list[tuple[Cell, ...]] = [(name, "(default)" if name == meta.default_config else "") for name in names]
    if not names:
        configs.append(("-", f"no *.yaml in {meta.config_dir}"))
    configs.append(("", (f"-c NAME, or -c path/to/file.yaml; dir: {meta.config_dir}", "dim")))
    blocks.append(Panel("Configs", configs))

    listing = list_profiles(env_file)
    profiles: list[tuple[Cell, ...]] = []
    if listing.error:
        profiles.append(("error", (listing.error, "red")))
    elif listing.path is None:
        profiles.append(("none", "no env.toml found; looked in: " + ", ".join(listing.looked_in)))
    else:
        profiles += [(name, f"executor={executor}") for name, executor in listing.profiles]
        if not listing.profiles:
            profiles.append(("none", "no profiles defined"))
        profiles.append(("", (f"from {listing.path}; use --run PROFILE or --batch PROFILE", "dim")))
    profiles.append(("", (PACKAGER_HELP, "dim")))
    blocks.append(Panel("Env profiles", profiles))

    if meta.input_artifacts or meta.output_artifacts:
        blocks.append(Panel("Artifacts", [(f"in  {name}", text) for name, text in meta.input_artifacts.items()]
                            + [(f"out {name}", text) for name, text in meta.output_artifacts.items()]))
    blocks.append(Panel("Overrides", list(OVERRIDE_SYNTAX)))
    blocks.append(global_options_panel())
    if meta.examples:
        blocks.append(Panel("Examples", [((example, "green"),) for example in meta.examples]))
    return blocks


def render_recipe_help(meta: RecipeMeta, command_path: str, console: Console | None = None, *,
                       env_file: str | None = None) -> None:
    """Print the help page of the recipe ``meta`` invoked as ``command_path``."""
    _print(recipe_help_blocks(meta, command_path, env_file=env_file), console)


def global_options_panel() -> Panel:
    """The "Global options" panel (shared by every help page)."""
    rows: list[tuple[Cell, ...]] = [(spelling, text) for spelling, _, text in GLOBAL_OPTIONS]
    rows.append(("-h, --help", "Show this message and exit"))
    rows.append(("", ("global options may go before or after the command, not after --", "dim")))
    return Panel("Global options", rows)


def render_global_options(console: Console | None = None) -> None:
    """Print the "Global options" panel."""
    _print([global_options_panel()], console)


def group_help_blocks(ctx: click.Context, text: str, rows: Iterable[tuple[str, str, str | None]]) -> list[Block]:
    """Help page of a command group: usage, description ``text``, commands by
    panel (``rows``: name, one-line help, panel or None for "Commands"), options."""
    blocks: list[Block] = [Para(f"Usage: {ctx.command_path} [OPTIONS] COMMAND [ARGS]...", "bold")]
    text = _unescape(text.strip())
    blocks.append(Para(text, padding=(1, 1, 1, 1)) if text else Blank())
    panels: dict[str, list[tuple[Cell, ...]]] = {}
    for name, short, panel in rows:
        panels.setdefault(panel or "Commands", []).append((name, _unescape(short)))
    blocks += [Panel(title, panel_rows) for title, panel_rows in panels.items()]
    blocks.append(Panel("Options", [(", ".join(ctx.help_option_names) or "--help", "Show this message and exit")]))
    return blocks


def command_rows(group: Any, ctx: click.Context,
                 listed: Mapping[str, str] | None = None) -> list[tuple[str, str, str | None]]:
    """(name, one-line help, help panel) of each visible command of ``group``; warns
    on stderr for each that failed to load. A command in ``listed`` is shown with
    that help, without being looked up (nor imported)."""
    rows: list[tuple[str, str, str | None]] = []
    for name in group.list_commands(ctx):
        if listed is not None and name in listed:
            rows.append((name, listed[name], None))
            continue
        command = group.get_command(ctx, name)
        if command is None or getattr(command, "hidden", False):
            continue
        short = short_help(command)
        rows.append((name, short, getattr(command, "rich_help_panel", None)))
        if short.startswith("failed to load"):
            print(f"warning: '{ctx.command_path} {name}' {short}", file=sys.stderr)
    return rows


def short_help(command: Any) -> str:
    """The one line a group's help shows for ``command``."""
    return (command.short_help or (command.help or "").strip().split("\n")[0]).strip()


def render_group_help(group: Any, ctx: click.Context, console: Console | None = None) -> None:
    """Print the help page of a command group (:func:`group_help_blocks`).

    A light replacement for Typer's rich help (which imports Markdown support and
    rich's renderer, ~50 ms) so that ``--help`` stays within its startup budget.
    """
    _print(group_help_blocks(ctx, group.help or "", command_rows(group, ctx)), console)


def _unescape(text: str) -> str:
    """Help written for Typer's rich markup mode shows ``\\[`` as ``[`` (as Typer does)."""
    return text.replace("\\[", "[")


def _print(blocks: list[Block], console: Console | None) -> None:
    if console is None:
        print_blocks(blocks)
    else:
        for renderable in rich_renderables(blocks):
            console.print(renderable)


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


class GlobalOptionsCommand(FastHelpCommand):
    """A command that takes the global options (``-c``, ``--run``, ``--batch``,
    ``--dry-run``, ...) as a recipe command does: its help page lists them after its
    own options (``nemotron nano3 pipe``, ``nemotron steps run``)."""

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Typer's help page, then the "Global options" panel."""
        super().format_help(ctx, formatter)
        render_global_options()


class FastHelpGroup(FastHelpMixin, TyperGroup):
    """A :class:`TyperGroup` with :class:`FastHelpMixin`, a light help page, and
    commands whose module is imported on first lookup (``resolve_lazy``, see
    :meth:`~nemo_runspec.cli.recipe_typer.RecipeTyper.add_command_module`)."""

    #: Called once, before the first lookup whose result it could change: a lookup
    #: of a name that is not a command (``nemotron`` sets it to add the commands of
    #: recipes found without a command file, which never replace a command, so
    #: looking up one needs no search).
    before_lookup: Any = None

    def _prepare(self) -> None:
        hook = self.__dict__.pop("before_lookup", None)
        if hook is not None:
            hook()

    def list_commands(self, ctx: Any) -> list[str]:
        """The commands, in the order they were added (generated ones last)."""
        self._prepare()
        return super().list_commands(ctx)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command ``cmd_name``, loading its module first if it was registered lazily."""
        known = self.commands.get(cmd_name)
        if known is None or hasattr(known, "commands"):
            self._prepare()  # a group may get generated commands too
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
        render_recipe_help(self.meta, ctx.command_path, env_file=env_file)


def recipe_command_class(meta: RecipeMeta) -> type[RecipeCommand]:
    """A :class:`RecipeCommand` subclass bound to ``meta`` (Typer instantiates it)."""
    return type(f"RecipeCommand_{meta.command_name}", (RecipeCommand,), {"meta": meta})
