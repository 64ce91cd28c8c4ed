"""Rich display of the ``--dry-run`` output: the pipeline view here, and the names of the
job's view (:mod:`nemo_runspec.execution.dry_run_display`, :mod:`nemo_runspec.backends.dry_run`),
which the backends below this layer print through.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from nemo_runspec.backends.dry_run import show_dry_run
from nemo_runspec.execution.dry_run_display import (
    display_dry_run,
    dry_run_sections,
    scale_rows,
    show_rendered,
    to_yaml,
)

if TYPE_CHECKING:
    from rich.console import Console

    from nemo_runspec.pipeline.records import StagePlan
    from nemo_runspec.slurm.prepared import PreparedJob

__all__ = ["display_dry_run", "dry_run_sections", "scale_rows", "show_dry_run", "show_pipeline", "show_rendered",
           "to_yaml"]


def show_pipeline(plans: Sequence[StagePlan], prepared: Mapping[str, PreparedJob] | None = None, *,
                  console: Console | None = None, driver: str | None = None) -> int:
    """Print the dry run of a pipeline: each stage's dry run (its exact sbatch script
    when ``prepared`` has it, else its local command), then the dependency graph.
    Skipped stages are listed, not shown. ``driver`` (the sbatch launcher) is the
    script of the one allocation that runs the stages; it is shown last. Returns 0."""
    from rich.console import Console
    from rich.rule import Rule

    from nemo_runspec.pipeline.chain import graph_lines

    console = console or Console()
    for i, plan in enumerate(plans, 1):
        console.print(Rule(f"stage {i}/{len(plans)}: {plan.name} ({plan.job.runspec.name})"))
        if plan.skip:
            console.print(f"{plan.name}: {plan.reason}", markup=False)
            continue
        show_dry_run(plan.job, (prepared or {}).get(plan.name), console=console)
        if plan.preparation is not None and plan.preparation.show is not None:
            plan.preparation.show(console)  # e.g. the evaluation config
    console.print(Rule("dependency graph"))
    for line in graph_lines(plans):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if driver is not None:
        console.print(Rule("one allocation (--launcher sbatch): the script submitted"))
        console.print(driver, markup=False, highlight=False, soft_wrap=True)
        console.print("The stages' scripts above run in this allocation, in order, with bash; "
                      "%j is the allocation's job id.", markup=False)
    elif prepared:
        console.print("Each <stage> in a --dependency line is that stage's Slurm job id at submission; "
                      "dependants also get --kill-on-invalid-dep=yes.", markup=False)
    return 0
