"""`nemotron kit`: utilities that check or prepare a cluster profile."""

from __future__ import annotations

import importlib

from nemo_runspec.cli.recipe_typer import RecipeTyper

app = RecipeTyper(name="kit", help="Kit utilities: preflight checks of a profile.")


@app.callback()
def _kit() -> None:
    """Kit utilities: preflight checks of a profile."""
    # A callback keeps `kit` a group even with one command, so `nemotron kit
    # preflght` is an unknown command instead of script arguments.

for _name, _module in (("preflight", "nemotron.cli.kit.preflight"),):
    try:
        _mod = importlib.import_module(_module)
    except Exception as exc:  # noqa: BLE001 - any import failure becomes a visible stub
        app.add_failed_command(_name, exc)
    else:
        app.add_recipe_command(getattr(_mod, _name), spec=_mod.SPEC, name=_name)
