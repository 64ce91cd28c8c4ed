"""`nemotron steps list|show|run`: the registered pipeline steps, one at a time.

A step is named ``PIPELINE/STAGE`` (``nano3/pretrain``). ``run`` runs one step
the way ``nemotron nano3 pipe --stages STAGE`` does: overrides without a stage
prefix, skipped when its output already exists for the same config and inputs
(``--no-resume`` runs it anyway).
"""

from __future__ import annotations

import typer

from nemo_runspec.cli.help import GlobalOptionsCommand
from nemo_runspec.cli.recipe_typer import RECIPE_CONTEXT_SETTINGS, RecipeTyper

app = RecipeTyper(name="steps", help="The registered pipeline steps: list them, show one, run one.")


def _registry() -> dict[str, object]:
    from nemotron.chains.nano3 import PIPELINES

    return {f"{pipe}/{step.name}": step for pipe, steps in PIPELINES.items() for step in steps}


def _step(name: str):  # noqa: ANN202 - a Step
    from nemo_runspec._suggest import closest, did_you_mean
    from nemo_runspec.errors import CLIUsageError

    steps = _registry()
    if name not in steps:
        # a bare stage name ("sft") is compared with the stage part of each step
        by_stage = {full.split("/", 1)[1]: full for full in steps}
        stage = None if "/" in name else (name if name in by_stage else closest(name, sorted(by_stage)))
        close = f"did you mean '{by_stage[stage]}'?" if stage else did_you_mean(name, steps)
        raise CLIUsageError(f"no step {name!r}", hint=close or "nemotron steps list shows them")
    return steps[name]


@app.command("list")
def list_steps() -> None:
    """List every registered step: name, recipe, how it is launched, what it does."""
    from rich.console import Console
    from rich.table import Table

    table = Table("step", "recipe", "launch", "description", box=None)
    for name, step in _registry().items():
        table.add_row(name, step.runspec.name, step.launch, step.description)
    Console().print(table)


@app.command("show", context_settings=dict(RECIPE_CONTEXT_SETTINGS), cls=GlobalOptionsCommand,
             options_metavar="[GLOBAL OPTIONS]")
def show(ctx: typer.Context, name: str = typer.Argument(..., metavar="PIPELINE/STAGE [KEY=VALUE...]",
                                       help="PIPELINE/STAGE, e.g. nano3/pretrain")) -> None:
    """Show one step: its script, runspec and, compiled with -c and overrides, what it
    consumes and publishes."""
    from nemo_runspec.cmdline.recipe_config import parse_recipe_config
    from nemo_runspec.job.compiled import compile_job
    from nemo_runspec.pipeline.step import consumed_artifacts, published_artifact

    step = _step(name)
    recipe = parse_recipe_config(ctx)
    job = compile_job(step.runspec, recipe, check_artifacts=False)
    spec = step.runspec
    rows = [("step", name), ("description", step.description), ("script", str(step.script)),
            ("recipe", spec.name), ("launch", spec.run.launch), ("image", spec.image or "-"),
            ("config", recipe.config or spec.config.default),
            ("consumes", ", ".join(f"{k}={v}" for k, v in consumed_artifacts(job.job_config).items()) or "-"),
            ("publishes", published_artifact(job.job_config) or "-")]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        typer.echo(f"{key:<{width}}  {value}")


@app.command("run", context_settings=dict(RECIPE_CONTEXT_SETTINGS), cls=GlobalOptionsCommand,
             options_metavar="[OPTIONS] [GLOBAL OPTIONS]")
def run(ctx: typer.Context, name: str = typer.Argument(..., metavar="PIPELINE/STAGE [KEY=VALUE...]",
                                                      help="PIPELINE/STAGE, e.g. nano3/pretrain"),
        no_resume: bool = typer.Option(False, "--no-resume", help="Run it even if its output exists")) -> None:
    """Run one step with the usual -c, overrides and --run/--batch/--dry-run."""
    import dataclasses

    from nemo_runspec.cli.runner import run_steps
    from nemo_runspec.cmdline.recipe_config import parse_recipe_config

    step = _step(name)
    recipe = parse_recipe_config(ctx)
    # the stage is implied: prefix the overrides for the pipeline's router
    recipe = dataclasses.replace(recipe, overrides=[_prefixed(o, step.name) for o in recipe.overrides])
    raise typer.Exit(run_steps([step], recipe, resume=not no_resume))


def _prefixed(override: str, stage: str) -> str:
    body = override.lstrip("+~")
    return f"{override[: len(override) - len(body)]}{stage}.{body}"
