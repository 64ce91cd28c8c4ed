"""``nemotron runspec``: inspect and check the ``[tool.runspec]`` blocks of recipe scripts.

Commands:

- ``show SCRIPT`` prints the resolved metadata (``--json`` for machines).
- ``validate PATH...`` checks files and directories (recursively, every ``*.py``
  that carries a ``# /// script`` block); one ``path:line: problem (hint)`` line
  per problem, a summary line, exit 1 when anything is invalid; a path that
  does not exist or cannot be read (a directory, a file) is an ``error:`` line
  and exit 2, before anything is checked.
- ``schema`` prints the JSON Schema of the table.

Module-level imports stay light (no rich, no nemo_run) so ``--help`` is fast.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from nemo_runspec.cli.recipe_typer import FastHelpGroup
from nemo_runspec.errors import NemoRunspecError
from nemotron.cli.commands.nano3.data.import_._common import PlainParamsCommand

if TYPE_CHECKING:
    from nemo_runspec.files import TreeLoop

app = typer.Typer(
    name="runspec",
    help="Inspect and validate the \\[tool.runspec] metadata of recipe scripts.",
    cls=FastHelpGroup,
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

#: Directory names never searched by ``validate``.
_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})


def _debug() -> bool:
    return os.environ.get("NEMOTRON_DEBUG", "") not in ("", "0", "false")


def _fail(exc: NemoRunspecError) -> NoReturn:
    if _debug():
        raise exc
    typer.echo(f"error: {exc}", err=True)
    raise typer.Exit(2)


@app.command(cls=PlainParamsCommand)
def show(
    script: Annotated[Path, typer.Argument(help="Recipe script with a '# /// script' block.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the resolved fields as JSON.")
    ] = False,
) -> None:
    r"""Show the resolved \[tool.runspec] fields of SCRIPT, including its config dir."""
    from nemo_runspec import parse
    from nemo_runspec.secrets import redact

    try:
        spec = parse(script)
    except NemoRunspecError as exc:
        _fail(exc)
    data = spec.to_dict()
    data["env"] = redact(data["env"])
    data["config_dir_exists"] = spec.config_dir.is_dir()
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    def fmt(value: object) -> str:
        return "[dim]-[/dim]" if value is None else escape(str(value))

    table = Table(title=escape(f"runspec: {spec.name}"), show_header=True, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    table.add_row("script", fmt(spec.script_path))
    table.add_row("schema", fmt(spec.schema))
    table.add_row("name", fmt(spec.name))
    table.add_row("docs", fmt(spec.docs))
    table.add_row("image", fmt(spec.image))
    table.add_row("setup", fmt(spec.setup))
    for section in ("run", "config", "resources"):
        for key, value in data[section].items():
            table.add_row(f"{section}.{key}", fmt(value))
    exists = "[green]exists[/green]" if data["config_dir_exists"] else "[red]missing[/red]"
    table.add_row("config_dir", f"{fmt(spec.config_dir)} ({exists})")
    if data["env"]:
        for key, value in data["env"].items():
            table.add_row(f"env.{escape(key)}", fmt(value))
    else:
        table.add_row("env", "[dim]-[/dim]")
    Console(soft_wrap=False).print(table)


def _has_block(path: Path) -> bool:
    """True when ``path`` has a ``# /// script`` opener. A file that cannot be read (no
    permission, a FIFO or device named ``*.py``, a symlink loop) raises LocalPathError
    naming it; a dangling symlink is no script and is skipped."""
    from nemo_runspec.errors import LocalPathError
    from nemo_runspec.files import read_bytes

    try:
        os.stat(path)
    except FileNotFoundError:
        return False  # a dangling symlink
    except OSError:
        pass  # a symlink loop, no permission: reading says which
    raw = read_bytes(path, what="file", error=LocalPathError)
    if b"# /// script" not in raw:
        return False
    from nemo_runspec.spec.pep723 import has_opener

    return has_opener(raw.decode("utf-8", errors="replace"))


def _missing(path: Path) -> bool:
    """True when nothing is at ``path`` (a dangling symlink included); a path that
    exists but cannot be reached (no permission) is not missing: reading says why."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return False


def _raise(exc: OSError) -> None:
    raise exc


def _refuse_loop(loop: TreeLoop) -> None:
    from nemo_runspec.errors import LocalPathError

    raise LocalPathError(loop.words(), path=loop.link, hint=loop.hint)


def _discover(root: Path) -> list[Path]:
    """Every ``*.py`` with a script block under ``root``; a directory or file that
    cannot be read raises OSError or LocalPathError (it could hold a script, so it is
    not skipped); so does a symlink loop."""
    from nemo_runspec.files import walk

    found: list[Path] = []
    for dirpath, dirnames, filenames in walk(root, on_error=_raise, on_loop=_refuse_loop):
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS
        )
        for name in sorted(filenames):
            if name.endswith(".py"):
                candidate = Path(dirpath) / name
                if _has_block(candidate):
                    found.append(candidate)
    return found


def _scripts(given: Path) -> list[Path]:
    """The scripts to check for one command-line path (a file, or a directory searched)."""
    from nemo_runspec.errors import LocalPathError
    from nemo_runspec.files import read_bytes

    if os.path.isdir(given):
        return _discover(given)
    read_bytes(given, what="file", error=LocalPathError)  # readable, and a regular file?
    return [given]


@app.command(cls=PlainParamsCommand)
def validate(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Scripts or directories; directories are searched recursively for *.py "
            "files that contain a '# /// script' block."
        ),
    ],
) -> None:
    r"""Check \[tool.runspec] blocks; one 'path:line: problem (hint)' line per problem.

    Exit 0 when every script is valid, 1 when any is invalid, 2 when a path does
    not exist or cannot be read (nothing is checked then).
    """
    from nemo_runspec.errors import LocalPathError
    from nemo_runspec.spec.parser import collect_errors

    missing = [p for p in paths if _missing(p)]
    if missing:
        more = f"also missing: {', '.join(map(str, missing[1:]))}" if len(missing) > 1 else None
        _fail(LocalPathError("no such file or directory", path=missing[0], hint=more))
    scripts: list[Path] = []
    for given in paths:
        try:
            scripts += _scripts(given)
        except LocalPathError as exc:
            _fail(LocalPathError(exc.problem, path=exc.path, line=exc.line,
                                 hint=exc.hint or "leave it out; nothing was checked"))
        except OSError as exc:
            where = Path(os.fsdecode(exc.filename)) if exc.filename else given
            what = "directory" if os.path.isdir(where) else "file"
            _fail(LocalPathError(f"cannot read {what}: {exc.strerror or exc}", path=where,
                                 hint="fix its permissions, or leave it out; nothing was checked"))

    checked = invalid = 0
    seen: set[str] = set()
    for path in scripts:
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        checked += 1
        errors = collect_errors(path)
        if not errors:  # the scale matrix against the configs it names (docs/runspec/v1/spec.md, 8)
            from nemo_runspec import parse
            from nemo_runspec.scales.check import check_against_configs

            try:
                errors = check_against_configs(parse(path))
            except NemoRunspecError as exc:
                errors = [exc]
        if errors:
            invalid += 1
            for exc in errors:
                typer.echo(str(exc))
    typer.echo(f"{checked} files checked, {invalid} invalid")
    if invalid:
        raise typer.Exit(1)


@app.command(cls=PlainParamsCommand)
def scales(
    script: Annotated[Path, typer.Argument(help="Recipe script with a '# /// script' block.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the matrix as JSON.")] = False,
) -> None:
    r"""Print SCRIPT's scale matrix: the GPU types, node counts and precisions it is known to work at.

    Each row is one \[\[tool.runspec.scales]] entry with the config overrides it applies
    (docs/runspec/v1/spec.md, section 8). `nemotron nano3 pretrain --scales` prints the same.
    """
    from nemo_runspec import parse
    from nemo_runspec.scales.show import print_matrix

    try:
        spec = parse(script)
    except NemoRunspecError as exc:
        _fail(exc)
    print_matrix(spec, as_json=as_json)


@app.command(cls=PlainParamsCommand)
def schema() -> None:
    r"""Print the JSON Schema (draft 2020-12) of the \[tool.runspec] table."""
    from nemo_runspec.spec.schema import runspec_json_schema

    json.dump(runspec_json_schema(), sys.stdout, indent=2)
    sys.stdout.write("\n")
