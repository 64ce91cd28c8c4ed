"""`nemotron kit`: utilities that check or prepare a cluster profile."""

from __future__ import annotations

from nemo_runspec.cli.recipe_typer import RecipeTyper

app = RecipeTyper(name="kit", help="Kit utilities: preflight checks of a profile.")


@app.callback()
def _kit() -> None:
    """Kit utilities: preflight checks of a profile."""
    # A callback keeps `kit` a group even with one command, so `nemotron kit
    # preflght` is an unknown command instead of script arguments.


app.add_command_module("preflight", "nemotron.cli.kit.preflight")
