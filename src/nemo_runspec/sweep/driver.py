"""What ``-m/--multirun`` does for a recipe command (docs/sweeps.md).

1. The command line is expanded into points (:func:`nemo_runspec.config.sweep.expand`).
2. The first point is compiled by the recipe command itself, its last step taken
   instead of run (:mod:`nemo_runspec.sweep.collect`): it says where the sweep runs.
3. Here (no profile, or ``executor = "local"``): every point is compiled and run by
   the command, one after another or ``--parallel N`` at once (:mod:`.local`).
4. On Slurm: points are grouped by allocation shape (their ``-c`` and ``run.*``
   values); one point per shape is compiled by the command, the others' configs are
   derived from it (:mod:`.points`), and each shape is one ``sbatch --array`` job
   (:mod:`.array`) — one for a sweep over training keys. ``--dry-run`` prints each
   array's exact script once and the points table, offline.
5. A rerun of the same command submits only the points that did not complete
   (:mod:`.record`, :mod:`.states`); ``--no-resume`` runs them all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nemo_runspec.config.sweep import SweepPlan, expand
from nemo_runspec.errors import CLIUsageError, ConfigError
from nemo_runspec.sweep.invoke import Points

if TYPE_CHECKING:
    from typer import Context

    from nemo_runspec.cmdline.recipe_config import RecipeConfig
    from nemo_runspec.spec.models import Runspec


def config_names(spec: Runspec) -> list[str]:
    """The recipe's config names (``-c`` sweeps and ``glob()`` pick among them)."""
    from pathlib import Path

    root = Path(spec.config_dir)
    return sorted(p.stem for p in root.glob("*.yaml")) if root.is_dir() else []


def sweep_id_for(spec: Runspec, cfg: RecipeConfig, plan: SweepPlan) -> str:
    """``<recipe slug>-sweep-<hash>``: the same command line gives the same id."""
    from nemo_runspec.config.jobdir import slugify

    key = plan.key(spec.name, cfg.profile or "", str(cfg.ctx.env_file or ""), *cfg.passthrough)
    return f"{slugify(spec.name)}-sweep-{key}"


def parallel_of(text: str | None) -> int | None:
    """``--parallel N`` as a number (None when not given)."""
    if text is None:
        return None
    if not text.isdigit() or int(text) < 1:
        raise CLIUsageError(f"--parallel must be a whole number >= 1, not {text!r}", key="--parallel")
    return int(text)


def run_sweep(command: Callable[[Context], Any], ctx: Context, spec: Runspec, cfg: RecipeConfig) -> int:
    """Run ``command`` (a recipe command taking the Typer context ``ctx``) once per point of
    the sweep its command line ``cfg`` (``parse_recipe_config(ctx)``) describes; returns the
    exit code (see the module docstring)."""
    plan = expand(cfg.overrides, config=cfg.config, config_names=config_names(spec))
    sweep_id = sweep_id_for(spec, cfg, plan)
    parallel = parallel_of(cfg.ctx.parallel)
    points = Points(command, ctx, cfg)
    first = points.take(plan.points[0])
    if first.kind == "other":
        raise ConfigError(f"-m/--multirun runs here or on Slurm; executor = {first.job.executor!r} "
                          "is not supported", key="executor", hint="submit the points one by one without -m")
    from nemo_runspec.job.compiled import _refuse_profile_as_argument

    _refuse_profile_as_argument(cfg.bare_words, first.job.env_file)
    if first.kind == "local" or (first.kind == "dry-run" and first.prepared is None):
        from nemo_runspec.sweep.here import sweep_here

        return sweep_here(points, plan, sweep_id, spec, cfg, parallel=parallel)
    from nemo_runspec.sweep.submit import sweep_on_slurm

    return sweep_on_slurm(points, first, plan, sweep_id, spec, cfg, parallel=parallel)
