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

import contextlib
import dataclasses
import json
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from nemo_runspec.config.sweep import Point, SweepPlan, expand
from nemo_runspec.errors import CLIUsageError, ConfigError, ExecutionError

if TYPE_CHECKING:
    from nemo_runspec.cli.recipe_config import RecipeConfig
    from nemo_runspec.sweep.collect import Taken


def config_names(spec: Any) -> list[str]:
    """The recipe's config names (``-c`` sweeps and ``glob()`` pick among them)."""
    from pathlib import Path

    root = Path(spec.config_dir)
    return sorted(p.stem for p in root.glob("*.yaml")) if root.is_dir() else []


def sweep_id_for(spec: Any, cfg: RecipeConfig, plan: SweepPlan) -> str:
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


class Points:
    """Compiles points by running the recipe command with the point's overrides."""

    def __init__(self, command: Callable[[Any], Any], ctx: Any, cfg: RecipeConfig) -> None:
        self.command, self.ctx, self.cfg = command, ctx, cfg

    @contextlib.contextmanager
    def as_point(self, point: Point) -> Iterator[None]:
        """The command's context made to read ``point``'s command line."""
        root = self.ctx.find_root()
        holder = root if _is_gctx(root.obj) else self.ctx  # where parse_recipe_config reads it
        saved = (holder.obj, self.ctx.args)
        holder.obj = dataclasses.replace(self.cfg.ctx, overrides=list(point.overrides), config=point.config,
                                         passthrough=list(self.cfg.passthrough))
        self.ctx.args = []
        try:
            yield
        finally:
            holder.obj, self.ctx.args = saved

    def take(self, point: Point) -> Taken:
        """What the command would do for ``point`` (compiled, checked, not run)."""
        from nemo_runspec.sweep.collect import collecting

        with collecting() as collector, self.as_point(point):
            self.command(self.ctx)
        if not collector.taken:
            raise ExecutionError(f"{self.ctx.command_path} made no job for point {point.index}",
                                 hint="this command does not take -m")
        return collector.taken[-1]

    def run(self, point: Point) -> int:
        """Run the command for ``point`` as it would run on its own."""
        with self.as_point(point):
            return int(self.command(self.ctx) or 0)


def _is_gctx(obj: Any) -> bool:
    from nemo_runspec.cli.context import GlobalContext

    return isinstance(obj, GlobalContext)


def run_sweep(command: Callable[[Any], Any], ctx: Any, spec: Any) -> int:
    """Run ``command`` (a recipe command taking the Typer context) once per point of the
    sweep its command line describes; returns the exit code (see the module docstring)."""
    from nemo_runspec.cli.recipe_config import parse_recipe_config

    cfg = parse_recipe_config(ctx)
    plan = expand(cfg.overrides, config=cfg.config, config_names=config_names(spec))
    sweep_id = sweep_id_for(spec, cfg, plan)
    parallel = parallel_of(cfg.ctx.parallel)
    points = Points(command, ctx, cfg)
    first = points.take(plan.points[0])
    if first.kind == "other":
        raise ConfigError(f"-m/--multirun runs here or on Slurm; executor = {first.job.executor!r} "
                          "is not supported", key="executor", hint="submit the points one by one without -m")
    from nemo_runspec.job import _refuse_profile_as_argument

    _refuse_profile_as_argument(cfg.bare_words, first.job.env_file)
    if first.kind == "local" or (first.kind == "dry-run" and first.prepared is None):
        from nemo_runspec.sweep.here import sweep_here

        return sweep_here(points, plan, sweep_id, spec, cfg, parallel=parallel)
    from nemo_runspec.sweep.submit import sweep_on_slurm

    return sweep_on_slurm(points, first, plan, sweep_id, spec, cfg, parallel=parallel)


def points_table(plan: SweepPlan, indices: Any = None, extra: dict[int, list[str]] | None = None,
                 header: tuple[str, ...] = ()) -> str:
    """``POINT  OVERRIDES`` lines (only ``indices`` when given), plus ``extra`` columns."""
    rows = [["POINT", *header, "OVERRIDES"]]
    for p in plan.points:
        if indices is not None and p.index not in indices:
            continue
        rows.append([str(p.index), *(extra or {}).get(p.index, []), p.label()])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def emit(record: dict[str, Any]) -> None:
    """The one JSON line a detached sweep prints on stdout."""
    print(json.dumps(record), flush=True, file=sys.stdout)
