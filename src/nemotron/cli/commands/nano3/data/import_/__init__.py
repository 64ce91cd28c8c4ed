"""`nemotron nano3 data import`: register existing data as artifacts.

Each command validates the directory layout that the matching ``data prep``
command writes, then publishes it to the artifact registry
(:func:`nemo_runspec.artifacts.registry.get_registry`). Parameters are plain
``Path``/``str``/``bool``/``list[str]`` handled by :class:`PlainParamsCommand`,
so neither ``--help`` nor a run imports pydantic.
"""

from __future__ import annotations

import typer

from nemo_runspec.cli.recipe_typer import FastHelpGroup
from nemotron.cli.commands.nano3.data.import_._common import PlainParamsCommand
from nemotron.cli.commands.nano3.data.import_.pretrain import pretrain
from nemotron.cli.commands.nano3.data.import_.rl import rl
from nemotron.cli.commands.nano3.data.import_.sft import sft

app = typer.Typer(
    name="import",
    help="Register existing data (pretrain, sft, rl) as an artifact after checking its layout.",
    cls=FastHelpGroup,
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

for _func in (pretrain, sft, rl):
    app.command(name=_func.__name__, cls=PlainParamsCommand)(_func)

__all__ = ["app"]
