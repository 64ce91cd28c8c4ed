"""The body every recipe command shares: compile, then run here, show, submit, or compose.

:func:`execute_recipe` is what a generated command (a recipe script found by
:mod:`nemo_runspec.spec.discovery`, or ``nemotron run SCRIPT``) runs. It is the same
flow as the forkable command files (``nemotron/cli/commands/nano3/pretrain.py``):
the launch method (``torchrun``, ``direct``, ``ray``) only changes what
:func:`~nemo_runspec.slurm.prepare_job` builds (the torchrun launcher, a plain
script, or our Ray template with the script as driver).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nemo_runspec.backends import compose
from nemo_runspec.cli.runner import launch
from nemo_runspec.job.compiled import compile_job

if TYPE_CHECKING:
    from nemo_run.run.experiment import Experiment

    from nemo_runspec.cmdline.recipe_config import RecipeConfig
    from nemo_runspec.job.run_config import RunConfig
    from nemo_runspec.spec.models import Runspec


def execute_recipe(spec: Runspec, run: RunConfig | RecipeConfig, *, experiment: Experiment | None = None,
                   dependencies: list[str] | None = None) -> int | str | None:
    """Compile the recipe ``spec`` as ``run`` asks, then run it, show it or submit it.

    Returns the exit code (a local run: the script's; ``--run``: the job's;
    ``--batch`` and dry runs: 0). With ``experiment`` (a ``nemo_run.Experiment``)
    the recipe's task is added to it instead and its task id returned (None for
    a dry run, which only shows the job): see :mod:`nemo_runspec.backends.compose`.
    ``dependencies``: task ids of the same experiment to wait for (nemo-run's). Composed, its
    ``${art:...}`` are not checked now but when the task starts (an earlier task may publish them).
    """
    job = compile_job(spec, run, check_artifacts=not compose.composing(experiment, dependencies))  # config + overrides + profile, with provenance
    # composed into the caller's experiment, else the backend the profile names (nemo_runspec.cli.runner)
    return launch(job, experiment=experiment, dependencies=dependencies)
