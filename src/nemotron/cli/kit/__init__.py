"""`nemotron kit`: utilities that check or prepare a cluster profile."""

from __future__ import annotations

import typer

from nemo_runspec.cli.recipe_typer import RecipeTyper

app = RecipeTyper(name="kit", help="Kit utilities: preflight checks of a profile, image squashing.")


@app.callback()
def _kit() -> None:
    """Kit utilities: preflight checks of a profile."""
    # A callback keeps `kit` a group even with one command, so `nemotron kit
    # preflght` is an unknown command instead of script arguments.


app.add_command_module("preflight", "nemotron.cli.kit.preflight")


@app.command(name="squash")
def _squash(ctx: typer.Context, profile: str = typer.Argument(..., help="env.toml profile"),
            image: str = typer.Argument(None, help="image (default: the profile's container_image)")) -> None:
    """Squash a container image into the profile's squash_dir once (enroot import on a compute node)."""
    from nemotron.cli.kit.squash import squash

    raise typer.Exit(squash(ctx, profile, image))
