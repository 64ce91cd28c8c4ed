"""`nemotron nano3 data import pretrain|sft|rl`: register existing data as artifacts.

Each command validates the directory layout that the matching ``data prep``
command writes, then publishes it to the command's artifact registry (its
env.toml ``[artifacts]``, else ``$NEMOTRON_HOME/artifacts``). Parameters are
plain ``Path``/``str``/``bool``/``list[str]`` handled by
:class:`PlainParamsCommand`, so neither ``--help`` nor a run imports pydantic.
"""

# No `from __future__ import annotations`: Typer reads the parameter annotations,
# which name the stage and must be evaluated where each command is made.

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from nemo_runspec.cli.recipe_typer import FastHelpGroup
from nemotron.cli.commands.nano3.data.import_._common import (
    DEFAULT_NAMES,
    PlainParamsCommand,
    run_import,
)

#: What each stage's data directory holds (checked by ``_common.CHECKS``).
LAYOUTS = {
    "pretrain": "pretrain data (blend.json + Megatron .bin/.idx)",
    "sft": "packed SFT data (Parquet packs + metadata.json)",
    "rl": "RL data (train.jsonl + validation.jsonl)",
}

app = typer.Typer(
    name="import",
    help="Register existing data (pretrain, sft, rl) as an artifact after checking its layout.",
    cls=FastHelpGroup,
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _import_command(kind: str) -> Callable[..., None]:
    """The ``data import KIND`` command."""

    def command(
        path: Annotated[Path, typer.Argument(metavar="PATH", help=f"Directory holding the {LAYOUTS[kind]}.",
                                             show_default=False)],
        name: Annotated[
            str | None,
            typer.Option("--name", metavar="NAME", help=f"Artifact name (default: {DEFAULT_NAMES[kind]}).",
                         show_default=False),
        ] = None,
        copy: Annotated[
            bool, typer.Option("--copy", help="Copy the data into the registry instead of recording its path.")
        ] = False,
        alias: Annotated[
            list[str] | None,
            typer.Option("--alias", metavar="ALIAS", show_default=False,
                         help="Extra alias for the new version (repeatable); 'latest' always moves."),
        ] = None,
    ) -> None:
        run_import(kind, path, name, copy, alias)

    command.__name__ = command.__qualname__ = kind
    command.__doc__ = f"Validate PATH as {LAYOUTS[kind]} and register it as the next version of the artifact."
    return command


for _kind in LAYOUTS:
    app.command(name=_kind, cls=PlainParamsCommand)(_import_command(_kind))

__all__ = ["LAYOUTS", "app"]
