"""Commands for recipe scripts that have no command file of their own.

Every recipe script with a ``[tool.runspec]`` block in the package's recipes
(:data:`nemotron.recipes.RECIPES_DIR`) or in a directory the user names
(``--recipe-dir DIR``, ``$NEMOTRON_RECIPE_DIRS``, env.toml ``[cli]
recipe_dirs``) becomes the command its runspec name spells: ``nano3/distill``
is ``nemotron nano3 distill``, ``team/eval/long`` is ``nemotron team eval
long``. A command that already exists there (a hand-written, forkable command
file such as ``commands/nano3/pretrain.py``) wins over the generated one; a
user's script of that name gets a ``warning:`` line saying the hand-written
command runs instead (and how to run the script: ``nemotron run PATH``).

A generated command behaves like a hand-written one: the recipe help panels
(configs, profiles, artifacts and examples from the script's docstring),
``-c``, overrides, ``--run``/``--batch``/``--dry-run``, through
:func:`nemo_runspec.cli.execute.execute_recipe`. Scripts are found by
:mod:`nemo_runspec.spec.discovery` (reading only their PEP 723 block); the full
runspec is parsed when the command is looked up, and a broken one becomes a
stub that reports it (one line, exit 2) without hiding other commands.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import typer

from nemo_runspec.cli.help import FastHelpCommand, FastHelpGroup
from nemo_runspec.cli.recipe_typer import RECIPE_CONTEXT_SETTINGS, RecipeTyper
from nemo_runspec.cmdline.context import GlobalContext
from nemo_runspec.spec.discovery import (
    Discovery,
    FoundRecipe,
    RecipeDir,
    discover,
    env_recipe_dirs,
    env_var_recipe_dirs,
)

#: Environment variable naming more recipe dirs (``os.pathsep``-separated).
RECIPE_DIRS_VAR = "NEMOTRON_RECIPE_DIRS"


def recipe_dirs(gctx: GlobalContext | None) -> tuple[list[RecipeDir], list[str]]:
    """The directories searched, in precedence order: ``--recipe-dir``,
    ``$NEMOTRON_RECIPE_DIRS``, env.toml ``[cli] recipe_dirs``, the package's recipes;
    and one line per problem reading env.toml's list."""
    from nemo_runspec.cli.help import discover_env_file
    from nemotron.recipes import RECIPES_DIR

    gctx = gctx or GlobalContext()
    dirs = [RecipeDir(Path(os.path.expanduser(d)).absolute(), "--recipe-dir") for d in gctx.recipe_dirs]
    dirs += env_var_recipe_dirs(os.environ.get(RECIPE_DIRS_VAR), RECIPE_DIRS_VAR)
    env_path, _ = discover_env_file(gctx.env_file)
    from_env, problems = env_recipe_dirs(env_path)
    dirs += from_env
    dirs.append(RecipeDir(RECIPES_DIR, "package"))
    return dirs, problems


def discovery_for(ctx: Any) -> Discovery:
    """The recipes of this invocation (searched once per root context)."""
    root = ctx.find_root()
    found = getattr(root, "_nemotron_discovery", None)
    if found is None:
        gctx = root.obj if isinstance(root.obj, GlobalContext) else None
        dirs, problems = recipe_dirs(gctx)
        found = discover(dirs)
        found.problems[:0] = problems
        root._nemotron_discovery = found
    return found


def attach(group: Any, prefix: tuple[str, ...], found: Discovery) -> None:
    """Add the generated commands under ``prefix`` to the click ``group`` (whose own
    commands win), making intermediate groups as needed."""
    for recipe in found.under(*prefix):
        rest = recipe.command_path[len(prefix):]
        if not rest:
            continue
        node = group
        for i, word in enumerate(rest[:-1]):
            child = node.commands.get(word)
            if child is None:
                child = recipe_group(word, (*prefix, *rest[: i + 1]))
                node.add_command(child, word)
            elif not hasattr(child, "commands"):
                found.problems.append(
                    f"{recipe.path}: recipe {recipe.name!r} cannot be a command: "
                    f"'{' '.join((*prefix, *rest[: i + 1]))}' is a command, not a group (rename the recipe)")
                break
            node = child
        else:
            if rest[-1] not in node.commands:
                node.add_command(lazy_command(recipe), rest[-1])
                found.problems += found.duplicate_problems(recipe.name)
            elif not isinstance(node.commands[rest[-1]], LazyGeneratedCommand):
                # a hand-written command of that name runs, not any script of that name
                found.problems += found.duplicate_problems(
                    recipe.name, hand_written="nemotron " + " ".join(recipe.command_path))


def recipe_group(name: str, path: tuple[str, ...]) -> Any:
    """An empty command group for generated recipe commands (``nemotron team ...``)."""
    return FastHelpGroup(name=name, help=f"Recipes under {'/'.join(path)}/ (found by their runspec).",
                         no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]})


def top_level(found: Discovery, taken: set[str]) -> list[str]:
    """First words of recipe names that are not a command of the root already."""
    return sorted({r.command_path[0] for r in found.recipes.values()} - taken)


def build_top_level(name: str, found: Discovery) -> Any:
    """The root entry ``name`` for generated recipes: a group, or the command of a
    one-word recipe name."""
    single = found.recipes.get(name)
    if single is not None and not found.under(name)[1:]:
        found.problems += found.duplicate_problems(name)
        return lazy_command(single)
    group = recipe_group(name, (name,))
    attach(group, (name,), found)
    return group


class LazyGeneratedCommand(FastHelpCommand):
    """Stands in for a generated command until its group looks it up
    (:meth:`~nemo_runspec.cli.help.FastHelpGroup.get_command` calls :meth:`resolve_lazy`)."""

    recipe: FoundRecipe

    def resolve_lazy(self) -> Any:
        """The real command: parse the runspec now; a broken one becomes a stub."""
        return recipe_command(self.recipe.path, self.recipe.command_path[-1])


def lazy_command(recipe: FoundRecipe) -> Any:
    """A placeholder command for ``recipe`` (its runspec is parsed on first lookup)."""
    cls = type(f"LazyGeneratedCommand_{recipe.command_path[-1]}", (LazyGeneratedCommand,), {"recipe": recipe})
    return cls(name=recipe.command_path[-1], help=f"{recipe.name} ({recipe.path})",
               context_settings=dict(RECIPE_CONTEXT_SETTINGS), callback=lambda: None)


def recipe_command(script: str | os.PathLike[str], name: str) -> Any:
    """The recipe command of ``script``: help panels from its runspec and docstring, the
    shared body :func:`~nemo_runspec.cli.execute.execute_recipe`. A script whose runspec
    does not parse gives a stub raising that one-line error."""
    from nemo_runspec import parse
    from nemo_runspec.errors import NemoRunspecError

    app = RecipeTyper()
    try:
        spec = parse(script)
    except NemoRunspecError as exc:
        app.add_failed_command(name, exc)
    else:
        def command(ctx: typer.Context) -> int | str | None:
            from nemo_runspec.cli.execute import execute_recipe
            from nemo_runspec.cmdline.recipe_config import parse_recipe_config

            return execute_recipe(spec, parse_recipe_config(ctx))

        command.__doc__ = command_doc(spec, name)
        app.add_recipe_command(command, spec=spec, name=name)
    cmd = typer.main.get_command(app)
    cmd.name = name
    return cmd


def command_doc(spec: Any, name: str) -> str:
    """The help text of a generated command: the script's module docstring (first line:
    description; ``Examples:``, ``Consumes:``, ``Produces:`` sections), else its
    runspec ``docs``; examples made from the recipe name when it gives none."""
    doc = script_docstring(spec.script_path) or spec.docs or f"Run the recipe {spec.name} ({spec.run.launch})."
    if "Examples:" not in doc:
        words = " ".join(spec.name.split("/"))
        doc = (doc.rstrip() + "\n\nExamples:\n"
               f"    nemotron {words} --dry-run\n"
               f"    nemotron {words} --run PROFILE\n"
               f"    nemotron run {spec.script_path} --dry-run\n")
    return doc


def script_docstring(path: Path) -> str | None:
    """The module docstring of the script at ``path`` (None when it has none or does not parse)."""
    import ast

    from nemo_runspec.errors import NemoRunspecError
    from nemo_runspec.files import read_bytes

    try:
        return ast.get_docstring(ast.parse(read_bytes(path, what="script")))
    except (NemoRunspecError, SyntaxError, ValueError):
        return None


def report(found: Discovery) -> None:
    """One ``warning:`` line on stderr per discovery problem not reported yet in this
    invocation (shown with help listings, and where generated commands are made)."""
    done = getattr(found, "_reported", 0)
    for problem in found.problems[done:]:
        print(f"warning: {problem}", file=sys.stderr)
    found._reported = len(found.problems)  # type: ignore[attr-defined]
