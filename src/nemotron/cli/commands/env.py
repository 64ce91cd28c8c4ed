"""``nemotron env``: inspect env.toml execution profiles.

``nemotron env list`` shows every profile (executor, parent, description) and
which file was read; ``nemotron env show PROFILE`` shows the resolved values and,
for each key, the profile and ``file:line`` that set it; ``nemotron env check``
validates every profile and section and says what was read in the reference
system's form (``container`` as ``container_image``, ...). Secrets are redacted.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from nemo_runspec.cli.recipe_typer import FastHelpGroup
from nemo_runspec.cmdline.context import GlobalContext
from nemo_runspec.env.discovery import not_found_error
from nemo_runspec.errors import NemoRunspecError
from nemotron.cli.commands.nano3.data.import_._common import PlainParamsCommand, fail

app = typer.Typer(
    name="env",
    help="Inspect env.toml execution profiles (used by --run/--batch). The file is the "
    "global --env-file, else $NEMOTRON_ENV_FILE, else the nearest env.toml from the "
    "current directory up to the project root.",
    cls=FastHelpGroup,
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# Under the `nemotron` app the global --env-file is taken out of argv before Typer
# runs (it lands in the root GlobalContext); this hidden option only serves direct
# invocations of this sub-app (tests, embedding).
EnvFileOption = Annotated[
    Path | None,
    typer.Option("--env-file", hidden=True, show_default=False),
]


def _env_file(ctx: typer.Context, explicit: Path | None) -> str | Path | None:
    """The env.toml named on the command line: the global option, else the local one."""
    root = ctx.find_root().obj
    if isinstance(root, GlobalContext):
        return root.env_file or explicit
    return explicit


def _console():
    from rich.console import Console

    return Console(soft_wrap=False, highlight=False)


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def _row(*cells: Any) -> list[Any]:
    """Cells as rich Text, so ``[dev]`` or ``$HOME`` are shown, never read as markup."""
    from rich.text import Text

    return [Text(str(c)) for c in cells]


@app.command("list", cls=PlainParamsCommand)
def list_profiles(ctx: typer.Context, env_file: EnvFileOption = None) -> None:
    """List the profiles of env.toml with their executor, parent and description."""
    from nemo_runspec import env as envmod

    try:
        path = envmod.find_env_file(_env_file(ctx, env_file))
        if path is None:
            raise not_found_error(None)
        ef = envmod.load_env_file(path)
    except NemoRunspecError as exc:
        fail(exc)
        return

    from rich.table import Table

    problems: list[NemoRunspecError] = []
    from rich.text import Text

    table = Table(title=Text("Profiles"), title_justify="left")
    for col in ("profile", "executor", "extends", "description"):
        table.add_column(col)
    for name in ef.profiles:
        raw = ef.profiles[name]
        try:
            prof = envmod.load_env_profile(name, ef)
            executor, extends, desc = prof.executor, raw.get("extends"), prof.description
        except NemoRunspecError as exc:
            problems.append(exc)
            problem = str(exc.problem)
            desc = problem if len(problem) <= 60 else problem[:57] + "..."  # the whole line follows
            executor, extends = "INVALID", raw.get("extends")
        table.add_row(*_row(name, executor, extends or "", desc or ""))
    for section in envmod.RESERVED_SECTIONS:
        if ef.sections.get(section):
            try:
                getattr(envmod, f"get_{section}_config")(ef)
            except NemoRunspecError as exc:
                problems.append(exc)
    console = _console()
    console.print(f"env file: {path}", markup=False, soft_wrap=True)
    if ef.profiles:
        console.print(table)
    else:
        console.print("No profiles.")
    present = [f"[{s}]" for s in envmod.RESERVED_SECTIONS if ef.sections.get(s)]
    if present:
        console.print("Special sections: " + ", ".join(present), markup=False)
    if problems:
        _print_problems(problems)
        raise typer.Exit(2)


def _print_problems(problems: list[NemoRunspecError]) -> None:
    """One ``error:`` line per distinct problem (every profile of a cycle, or every child
    of a broken parent, has the same one)."""
    for line in dict.fromkeys(f"error: {exc}" for exc in problems):
        typer.echo(line, err=True)


@app.command("show", cls=PlainParamsCommand)
def show_profile(
    ctx: typer.Context,
    profile: Annotated[
        str | None,
        typer.Argument(help="Profile name (default: [cli] default_profile).", show_default=False),
    ] = None,
    env_file: EnvFileOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the resolved profile as JSON (secrets redacted).")
    ] = False,
) -> None:
    """Show a resolved profile: each value and the profile and file:line that set it."""
    from nemo_runspec import env as envmod

    try:
        path = envmod.find_env_file(_env_file(ctx, env_file))
        if path is None:
            raise not_found_error(profile)
        ef = envmod.load_env_file(path)
        if profile is None:
            profile = envmod.get_cli_config(ef).get("default_profile")
            if profile is None:
                raise envmod.EnvFileError(
                    "no profile given and [cli] default_profile is not set",
                    path=path,
                    hint="nemotron env show PROFILE; `nemotron env list` lists them",
                )
        prof = envmod.load_env_profile(profile, ef)
    except NemoRunspecError as exc:
        fail(exc)
        return

    from nemo_runspec.job.settings import container_choice

    shown = prof.redacted_values()
    src = prof.sources.get("container_image")
    container = container_choice(prof.values, src.label if src else None)
    if as_json:
        data = prof.to_dict(redacted=True)
        data["defaults"] = {
            k: v for k, v in envmod.profile_defaults().items() if k not in prof.values
        }
        if container:
            data["container"] = container
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return

    from rich.table import Table
    from rich.text import Text

    table = Table(
        title=Text(f"Profile [{prof.name}]  (chain: {' -> '.join(prof.chain)})"),
        title_justify="left",
    )
    table.add_column("key", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("set at", no_wrap=True)
    for key, value in shown.items():
        if isinstance(value, dict) and value:
            for sub, subval in value.items():
                src = prof.sources.get(f"{key}.{sub}") or prof.sources.get(key)
                table.add_row(*_row(f"{key}.{sub}", _fmt(subval), src.label if src else ""))
        else:
            src = prof.sources.get(key)
            table.add_row(*_row(key, _fmt(value), src.label if src else ""))
    for key, value in envmod.profile_defaults().items():
        if key not in prof.values:
            table.add_row(*_row(key, _fmt(value), "(default)"), style="dim")
    console = _console()
    console.print(f"env file: {path}", markup=False, soft_wrap=True)
    console.print(table)
    if container:
        console.print(f"container: {container}", markup=False, soft_wrap=True)
    for note in prof.notes:
        console.print(f"{'warning' if note.warn else 'note'}: {note}", markup=False, soft_wrap=True)


@app.command("check", cls=PlainParamsCommand)
def check(
    ctx: typer.Context,
    profiles: Annotated[
        list[str] | None,
        typer.Argument(help="Profiles to check (default: every profile).", show_default=False),
    ] = None,
    env_file: EnvFileOption = None,
) -> None:
    """Check env.toml: every profile (or those named) and the special sections.

    Prints `ok [PROFILE] (executor)` per valid profile, a note for each key read in
    the reference system's form (`container`, an `env_vars` list, ...), and one
    `error:` line per problem; exits 2 when there is any.
    """
    from nemo_runspec import env as envmod

    try:
        path = envmod.find_env_file(_env_file(ctx, env_file))
        if path is None:
            raise not_found_error(profiles[0] if profiles else None)
        ef = envmod.load_env_file(path)
    except NemoRunspecError as exc:
        fail(exc)
        return
    problems: list[NemoRunspecError] = []
    said: set[str] = set()
    out = [f"env file: {path}"]
    for name in profiles or list(ef.profiles):
        try:
            prof = envmod.load_env_profile(name, ef)
        except NemoRunspecError as exc:
            problems.append(exc)
            continue
        out.append(f"ok [{name}] ({prof.executor})")
        for note in prof.notes:
            line = f"  {'warning' if note.warn else 'note'}: {note}"
            if line not in said:  # a parent's notes come with each child
                said.add(line)
                out.append(line)
    if not profiles:
        try:
            envmod.read_sections(ef)
            out += [f"ok [{s}]" for s in envmod.RESERVED_SECTIONS if ef.sections.get(s)]
        except NemoRunspecError as exc:
            problems.append(exc)
    if not ef.profiles and not profiles:
        out.append("no profiles")
    sys.stdout.write("\n".join(out) + "\n")
    _print_problems(problems)
    if problems:
        raise typer.Exit(2)
