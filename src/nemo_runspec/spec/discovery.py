"""Find recipe scripts: every ``*.py`` under a directory with a ``[tool.runspec]`` block.

Cheap enough for ``nemotron --help``: only the first :data:`HEAD_BYTES` of each
``*.py`` file are read; only files with a ``# /// script`` line have that PEP 723
block parsed (stdlib ``tomllib``), and a file counts as a recipe when the parsed
TOML has a ``tool.runspec`` table, however it is spelled (``[tool.runspec]``,
``[tool]`` then ``runspec.name = ...``, an inline table). A block that does not
parse is reported only when it mentions ``runspec`` (else it is another tool's). The full check of the
block (:func:`nemo_runspec.parse`) runs when the recipe's command is looked
up. Directories whose name starts with ``.`` or ``_`` (``__pycache__``,
``.git``) are not entered, nor those of :data:`SKIP_DIRS`; the walk stops
:data:`MAX_DEPTH` levels down.

Standard library only: the CLI imports this module to list its commands.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

#: Bytes of each file searched for the ``# /// script`` block.
HEAD_BYTES = 16384
#: Directory levels below a recipe dir that are searched.
MAX_DEPTH = 6
#: Directories never searched (besides names starting with ``.`` or ``_``).
SKIP_DIRS = frozenset({"node_modules", "site-packages", "venv", "build", "dist"})

_OPENER = re.compile(rb"(?m)^# /// script[ \t]*\r?$")
_MENTIONS_RUNSPEC = re.compile(rb"runspec")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*$")


@dataclass(frozen=True)
class RecipeDir:
    """A directory to search, and who named it (for errors): ``--recipe-dir``,
    ``$NEMOTRON_RECIPE_DIRS``, ``env.toml:LINE [cli] recipe_dirs`` or ``package``."""

    path: Path
    origin: str


@dataclass(frozen=True)
class FoundRecipe:
    """A recipe script found in a :class:`RecipeDir`."""

    name: str
    """The runspec's ``name`` (``nano3/distill``)."""
    path: Path
    """The script (absolute)."""
    origin: str
    """Who named the directory it was found in."""

    @property
    def command_path(self) -> tuple[str, ...]:
        """The command words of the recipe: its name split at ``/`` (``("nano3", "distill")``)."""
        return tuple(self.name.split("/"))


@dataclass
class Discovery:
    """What :func:`discover` found: recipes by name (first one wins) and the problems,
    each one line ``path[:line]: problem (hint)``."""

    recipes: dict[str, FoundRecipe] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    shadowed: dict[str, list[FoundRecipe]] = field(default_factory=dict)
    """Scripts found after another of the same name (by name, in search order): they get
    no command. What runs instead (the first script's generated command, or a
    hand-written command of that name) is known only where the commands are made, so
    the warning is said there (:meth:`duplicate_problems`)."""

    def duplicate_problems(self, name: str, *, hand_written: str | None = None) -> list[str]:
        """One line per script of ``name`` that gets no command, saying what runs instead:
        ``hand_written`` (the command words, ``nemotron nano3 pretrain``) when a
        hand-written command has that name, else the first script's generated command.
        The package's own scripts are not named beside a hand-written command (it is
        theirs)."""
        first = self.recipes.get(name)
        if first is None:
            return []
        words = "nemotron " + " ".join(first.command_path)
        if hand_written is not None:
            return [f"{r.path}: recipe {name!r} ({r.origin}) gets no command: `{hand_written}` is a "
                    "hand-written command and runs instead (run this script with `nemotron run "
                    f"{r.path}`, or rename it)"
                    for r in [first, *self.shadowed.get(name, [])] if r.origin != "package"]
        return [f"{r.path}: recipe name {name!r} is taken by {first.path} ({first.origin}): `{words}` "
                "runs that one (rename one of them)" for r in self.shadowed.get(name, [])]

    def under(self, *prefix: str) -> list[FoundRecipe]:
        """The recipes whose command path starts with ``prefix``, in name order."""
        n = len(prefix)
        return sorted((r for r in self.recipes.values() if r.command_path[:n] == prefix),
                      key=lambda r: r.name)


def read_name(path: str | os.PathLike[str]) -> str | None:
    """The runspec ``name`` of the script at ``path``; None when it has no ``[tool.runspec]``
    block in its first :data:`HEAD_BYTES`.

    Raises :class:`~nemo_runspec.errors.RunspecError` (one line naming the file and
    line) when the block is there but its TOML or ``name`` is not usable.
    """
    from nemo_runspec.errors import RunspecError
    from nemo_runspec.files import read_bytes

    shown = os.fspath(path)
    head = read_bytes(shown, what="script", limit=HEAD_BYTES, head=True, error=RunspecError)
    if _OPENER.search(head) is None:
        return None
    from nemo_runspec.spec.pep723 import find_block  # PEP 723's rules, as parse() reads the block

    text = head.decode("utf-8", errors="replace")
    if len(head) == HEAD_BYTES:  # cut mid-file: drop the partial last line
        text = text.rsplit("\n", 1)[0]
    ours = _MENTIONS_RUNSPEC.search(head) is not None  # a broken block is reported only then
    try:
        block = find_block(text, shown)
    except RunspecError:
        if ours:
            raise
        return None
    try:
        data = tomllib.loads("\n".join(block.lines))
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        if not ours:
            return None  # another tool's PEP 723 block
        why = exc if isinstance(exc, tomllib.TOMLDecodeError) else "values nested too deeply"
        raise RunspecError(f"invalid TOML in the script block: {why}", path=shown, line=block.opener_line,
                           hint="nemotron runspec validate PATH shows the exact line") from None
    tool = data.get("tool")
    if not isinstance(tool, dict) or "runspec" not in tool:
        return None  # a PEP 723 block without a runspec (dependencies only, another tool's table)
    table = tool["runspec"]
    name = table.get("name") if isinstance(table, dict) else None
    if not isinstance(name, str) or not _NAME.match(name):
        raise RunspecError(
            "[tool.runspec] has no usable 'name'" if name is None else f"invalid recipe name {name!r}",
            path=shown, line=block.opener_line, key="name",
            hint='name = "group/command" (letters, digits, _ . - and / between parts)')
    return name


def scan(directory: RecipeDir) -> tuple[list[FoundRecipe], list[str]]:
    """The recipes under one directory, and one line per problem (a missing directory,
    a script whose block cannot be read)."""
    from nemo_runspec.errors import RunspecError

    root = directory.path
    if not root.is_dir():
        what = "does not exist" if not root.exists() else "is not a directory"
        return [], [f"{directory.origin}: recipe dir {root} {what} "
                    "(create it, or stop naming it there)"]
    found: list[FoundRecipe] = []
    problems: list[str] = []
    from nemo_runspec.files import walk

    base_depth = len(root.parts)
    loops: list[str] = []
    for current, dirs, files in walk(root, on_loop=lambda loop: loops.append(loop.problem())):
        depth = len(Path(current).parts) - base_depth
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")) and d not in SKIP_DIRS
                         and depth < MAX_DEPTH)
        for file in sorted(files):
            if not file.endswith(".py") or file.startswith(("_", ".")):
                continue
            path = Path(current, file)
            try:
                name = read_name(path)
            except RunspecError as exc:
                problems.append(str(exc))
                continue
            if name is not None:
                found.append(FoundRecipe(name=name, path=path.absolute(), origin=directory.origin))
    return found, problems + [f"{directory.origin}: {loop} (not searched)" for loop in loops]


def discover(dirs: Iterable[RecipeDir]) -> Discovery:
    """Scan ``dirs`` in order; a name found twice keeps the first script (the others are
    in :attr:`Discovery.shadowed`)."""
    result = Discovery()
    seen: set[Path] = set()
    for directory in dirs:
        key = directory.path.absolute()
        if key in seen:
            continue
        seen.add(key)
        recipes, problems = scan(directory)
        result.problems += problems
        for recipe in recipes:
            first = result.recipes.get(recipe.name)
            if first is None:
                result.recipes[recipe.name] = recipe
            elif first.path != recipe.path:
                result.shadowed.setdefault(recipe.name, []).append(recipe)
    return result


def env_recipe_dirs(env_file: str | os.PathLike[str] | None) -> tuple[list[RecipeDir], list[str]]:
    """``[cli] recipe_dirs`` of ``env_file`` (relative paths are relative to its directory),
    read with ``tomllib`` only; and one line per problem with it."""
    if env_file is None:
        return [], []
    path = Path(env_file)
    if not path.is_file():
        return [], []  # missing, or a pipe/device (reading a FIFO would block): reported later
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except FileNotFoundError:
        return [], []
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return [], []  # reported by whichever command reads env.toml for real
    cli = data.get("cli")
    value = cli.get("recipe_dirs") if isinstance(cli, dict) else None
    if value is None:
        return [], []
    line = _line_of(text, "recipe_dirs")
    where = f"{path}:{line}" if line else str(path)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return [], [f"{where}: [cli] recipe_dirs must be a list of directories "
                    '(recipe_dirs = ["path/to/recipes"])']
    origin = f"{where} [cli] recipe_dirs"
    return [RecipeDir(path.parent / Path(os.path.expanduser(v)), origin) for v in value], []


def env_var_recipe_dirs(value: str | None, var: str = "NEMOTRON_RECIPE_DIRS") -> list[RecipeDir]:
    """The directories of ``$NEMOTRON_RECIPE_DIRS`` (``os.pathsep``-separated)."""
    return [RecipeDir(Path(os.path.expanduser(p)).absolute(), f"${var}")
            for p in (value or "").split(os.pathsep) if p.strip()]


def _line_of(text: str, key: str) -> int | None:
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=", re.M)
    match = pattern.search(text)
    return text.count("\n", 0, match.start()) + 1 if match else None
