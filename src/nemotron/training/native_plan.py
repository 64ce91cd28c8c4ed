"""What a native stage will call in the image its job names: the dry run's "Native backend" block.

``nemotron nano3 sft -c default --run P --dry-run`` (and ``pretrain``, ``rl``,
``convert``, and each of those stages in ``nano3 pipe --dry-run``) prints, after the job
itself, the compatibility table's row for the job's image (``run.env.container_image``:
the profile's, else the runspec's), the library versions it carries and what our
entry will call there: the recipe function and its arguments (Megatron-Bridge), or the
NeMo-RL example flow and ``setup``'s arity. The job makes the same choice from the
versions it finds installed when it starts (:mod:`nemotron.training.version_check`);
the dry run says what the table promises for the image.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .versions import STAGE_LIBRARY, row_for, stage_of

TITLE = "Native backend (in this image; nemotron.training.versions)"


def _recipe_lines(stage: str, train_config: Mapping[str, Any], version: str) -> list[str]:
    from nemo_runspec.errors import ConfigError

    from .bridge_lines import ENTRY_POINTS, line_for
    from .megatron_bridge import recipe_for

    line = line_for(version)
    if line is None:
        return [f"  megatron-bridge {version} is outside every supported line: the job stops when it starts (exit 2)"]
    if stage == "convert":
        from .convert import export_calls
        return [f"  line             {line.name}", *(f"  export           {c}" for c in export_calls(line))]
    try:
        target, kwargs = recipe_for(stage, train_config, line)
    except ConfigError as exc:
        return [f"  line             {line.name}", f"  recipe function  error when the job starts: {exc}"]
    args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    entry = ENTRY_POINTS[stage]
    return [f"  line             {line.name}",
            f"  recipe function  {target}({args})",
            f"  entry point      {entry}(config, forward_step_func=forward_step)"]


def _rl_lines(version: str) -> list[str]:
    from .rl_lines import line_for

    line = line_for(version)
    if line is None:
        return [f"  nemo-rl {version} is outside every supported line: the job stops when it starts (exit 2)"]
    data = "data.train / data.validation entries" if line.per_split_data else "flat data keys"
    return [f"  line             {line.name}",
            f"  follows          NeMo-RL's {line.example}: {data}, setup -> {line.setup_values} values, grpo_train"]


def plan_lines(recipe_name: str, run_env: Mapping[str, Any], train_config: Mapping[str, Any]) -> list[str]:
    """The block's lines for a job of ``recipe_name`` (empty for stages with no native library)."""
    stage = stage_of(recipe_name)
    dist = STAGE_LIBRARY.get(stage)
    if dist is None:
        return []
    image = str(run_env.get("container_image") or "")
    row = row_for(image)
    if not image or image.strip().lower() in ("none", "null"):
        return [TITLE, "  image            none (bare metal): the job checks the versions installed on the nodes"]
    if row is None:
        return [TITLE, f"  image            {image}: not in the compatibility table; the job reads the installed "
                       f"{dist} when it starts and uses its line, or stops with one line (exit 2)"]
    head = [TITLE, f"  image            {row.image}" + ("  (inferred: no release table row)" if row.inferred else "")]
    head.append("  versions         " + ", ".join(f"{k} {v}" for k, v in row.versions.items()))
    if stage not in row.stages:
        return [*head, f"  not for {stage:<11}{row.why_not}; the job stops when it starts (exit 2)"]
    version = row.versions[dist]
    body = _rl_lines(version) if dist == "nemo-rl" else _recipe_lines(stage, train_config, version)
    return [*head, *body, f"  source           {row.source}",
            "  at start         the job reads the installed versions and checks them against this row"]


def show_plan(job: Any, console: Any = None) -> None:
    """Print the block for a compiled job (a ``CompiledJob``) on ``console`` (default: stdout)."""
    from omegaconf import OmegaConf
    from rich.console import Console

    train = OmegaConf.to_container(job.train_config, resolve=False)
    lines = plan_lines(job.runspec.name, job.run_env, train)
    if not lines:
        return
    out = console or Console(highlight=False)
    out.print(lines[0], style="bold", markup=False)
    for line in lines[1:]:
        out.print(line, markup=False, highlight=False, soft_wrap=True)


def show_dry_run(job: Any, slurm_job: Any = None, *, console: Any = None) -> int:
    """:func:`nemo_runspec.cli.display.show_dry_run`, then the block; returns 0. The nano3
    training commands use it in place of the library's."""
    from nemo_runspec.cli.display import show_dry_run as show_job

    show_job(job, slurm_job, console=console)
    show_plan(job, console)
    return 0


def prepare_native(job: Any) -> Any:
    """A pipeline step's ``prepare`` hook: the job as it is, its dry run followed by the block."""
    from nemo_runspec.pipeline.step import Preparation

    return Preparation(job, show=lambda console: show_plan(job, console))
