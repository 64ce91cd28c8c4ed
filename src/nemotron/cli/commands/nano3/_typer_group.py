"""The `nemotron nano3` command tree, registered with :class:`RecipeTyper`.

Each command module is imported on its own, when the command is looked up: one
that fails to import becomes a stub command that reports the error instead of
vanishing from ``--help``.
"""

from __future__ import annotations

from nemo_runspec.cli.help import GlobalOptionsCommand
from nemo_runspec.cli.recipe_typer import RecipeTyper

app = RecipeTyper(name="nano3", help="Nemotron 3 Nano recipes: data prep, pretrain, sft, convert, rl, evaluation, "
                                     "model import and the whole chain (pipe).")
data_app = RecipeTyper(name="data", help="Data commands.")
prep_app = RecipeTyper(name="prep", help="Prepare training data for each stage (Ray).")

_PKG = "nemotron.cli.commands.nano3"

#: (typer app, command name, module, rich help panel)
COMMANDS: list[tuple[RecipeTyper, str, str, str | None]] = [
    (app, "pretrain", f"{_PKG}.pretrain", "Training stages"),
    (app, "sft", f"{_PKG}.sft", "Training stages"),
    (app, "convert", f"{_PKG}.convert", "Training stages"),
    (app, "rl", f"{_PKG}.rl", "Training stages"),
    (app, "eval", f"{_PKG}.eval", "Evaluation"),
    (prep_app, "pretrain", f"{_PKG}.data.prep", None),
    (prep_app, "sft", f"{_PKG}.data.prep", None),
    (prep_app, "rl", f"{_PKG}.data.prep", None),
]

for _target, _name, _module, _panel in COMMANDS:
    _target.add_command_module(_name, _module, rich_help_panel=_panel)

data_app.add_typer(prep_app, name="prep")
# Imported when looked up (`nemotron nano3 pretrain` needs none of them); one that
# fails to import is a stub reporting why, never dropped.
data_app.add_lazy_typer("import", f"{_PKG}.data.import_")
app.add_typer(data_app, name="data", rich_help_panel="Data")
model_app = RecipeTyper(name="model", help="Model commands: import an existing checkpoint, evaluate one.")
model_app.add_command_module("eval", f"{_PKG}.eval")
model_app.add_lazy_typer("import", f"{_PKG}.model.import_")
app.add_typer(model_app, name="model", rich_help_panel="Models")
app.add_lazy_command("pipe", f"{_PKG}.pipe", "pipe", rich_help_panel="Pipelines",
                     context_settings={"allow_extra_args": True, "ignore_unknown_options": True,
                                       "help_option_names": ["-h", "--help"]},
                     cls=GlobalOptionsCommand, options_metavar="[OPTIONS] [GLOBAL OPTIONS] [STAGE.KEY=VALUE...]")
