"""`nemotron nano3 pipe`: the nano3 chain, data prep to evaluation, as one command.

The stages are :data:`nemotron.chains.nano3.STEPS`. Every stage is compiled (config +
per-stage overrides + profile), then run here one after another, shown (``--dry-run``:
every stage's exact script and the graph), or submitted to Slurm as one ``afterok`` chain
(one allocation with ``--launcher sbatch``). See docs/pipelines.md.
"""

from __future__ import annotations

import typer

from nemo_runspec.cli.runner import LAUNCHERS, run_steps  # noqa: F401 - their old home
from nemo_runspec.cmdline.recipe_config import parse_recipe_config
from nemo_runspec.pipeline.stage_selection import select_stages
from nemotron.chains.nano3 import PIPELINES, STEPS  # noqa: F401 - their old home


def pipe(
    ctx: typer.Context,
    stages: str = typer.Option(None, "--stages", "-s", metavar="LIST",
                               help="Stages to run: names and ranges, e.g. 'pretrain,sft' or 'prep-sft:rl'"),
    no_resume: bool = typer.Option(False, "--no-resume", help="Run every stage, even those whose output exists"),
    launcher: str = typer.Option("nemo-run", "--launcher", "-l", metavar="NAME",
                                 help="On Slurm: nemo-run (a job per stage, an afterok chain) or sbatch "
                                      "(every stage in one allocation, in order, no queueing between them)"),
    no_pin: bool = typer.Option(False, "--no-pin",
                                help="Inputs from outside the pipe resolve when each stage starts (:latest then "
                                     "means latest at that moment), not when the pipe starts; what the pipe's "
                                     "own stages publish is always used as published"),
) -> None:
    """Run the nano3 chain: data prep, pretrain, SFT, convert, RL and evaluation.

    Overrides name their stage: pretrain.train.train_iters=5, *.run.env.nodes=2.
    A stage whose output artifact was made from the same config and inputs is
    skipped, so a rerun resumes after a failure (--no-resume runs everything).

    Examples:
        nemotron nano3 pipe -c tiny
        nemotron nano3 pipe -c tiny --stages pretrain:sft --dry-run
        nemotron nano3 pipe -c tiny --batch dev pretrain.fallback.max_steps=20
        nemotron nano3 pipe -c tiny --run dev --launcher sbatch
    """
    # FORK POINT: the stages run here in order, or go to Slurm through nemo-run as one afterok
    # chain or one allocation (nemo_runspec.cli.runner.run_steps); replace this line to run them elsewhere.
    raise typer.Exit(run_steps(select_stages(STEPS, stages), parse_recipe_config(ctx),
                               resume=not no_resume, launcher=launcher, pin_inputs=not no_pin))
