"""Compiling and running a sweep's points through their recipe command, and what the
sweep prints (the points table, its JSON line)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
from collections.abc import Callable, Collection, Iterator
from typing import TYPE_CHECKING, Any

from nemo_runspec.config.sweep import Point, SweepPlan
from nemo_runspec.errors import ExecutionError

if TYPE_CHECKING:
    from typer import Context

    from nemo_runspec.cmdline.recipe_config import RecipeConfig
    from nemo_runspec.sweep.collect import Taken


class Points:
    """Compiles points by running the recipe command with the point's overrides."""

    def __init__(self, command: Callable[[Context], Any], ctx: Context, cfg: RecipeConfig) -> None:
        self.command, self.ctx, self.cfg = command, ctx, cfg

    @contextlib.contextmanager
    def as_point(self, point: Point) -> Iterator[None]:
        """The command's context made to read ``point``'s command line."""
        root = self.ctx.find_root()
        # where parse_recipe_config reads the GlobalContext: the root's, else the command's
        holder = root if type(root.obj) is type(self.cfg.ctx) else self.ctx
        saved = (holder.obj, self.ctx.args)
        # multirun off: the point is one run (compile_job refuses -m anywhere else)
        holder.obj = dataclasses.replace(self.cfg.ctx, overrides=list(point.overrides), config=point.config,
                                         passthrough=list(self.cfg.passthrough), multirun=False)
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


def points_table(plan: SweepPlan, indices: Collection[int] | None = None, extra: dict[int, list[str]] | None = None,
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


def point_json(point: Point) -> dict[str, Any]:
    """A point as the sweep record keeps it (values redacted)."""
    from nemo_runspec.secrets import redact_text

    return {"index": point.index, "values": {k: redact_text(str(v)) for k, v in point.values.items()},
            "overrides": [redact_text(o) for o in point.overrides]}
