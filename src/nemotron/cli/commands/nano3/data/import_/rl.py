"""`nemotron nano3 data import rl`: register existing RL data (train.jsonl + validation.jsonl) as an artifact."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nemotron.cli.commands.nano3.data.import_._common import DEFAULT_NAMES, run_import

KIND = "rl"


def rl(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="Directory holding the RL data (train.jsonl + validation.jsonl).", show_default=False)],
    name: Annotated[
        str | None,
        typer.Option("--name", metavar="NAME", help=f"Artifact name (default: {DEFAULT_NAMES[KIND]}).", show_default=False),
    ] = None,
    copy: Annotated[
        bool, typer.Option("--copy", help="Copy the data into the registry instead of recording its path.")
    ] = False,
    alias: Annotated[
        list[str] | None,
        typer.Option("--alias", metavar="ALIAS", help="Extra alias for the new version (repeatable); 'latest' always moves.",
                     show_default=False),
    ] = None,
) -> None:
    """Validate PATH as RL data (train.jsonl + validation.jsonl) and register it as the next version of the artifact."""
    run_import(KIND, path, name, copy, alias)
