"""A sweep on this machine (no profile, or ``executor = "local"``): :mod:`nemo_runspec.sweep.local`
runs the points; this module shows a dry run, skips what completed and records the results."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from nemo_runspec.config.sweep import Point, SweepPlan

if TYPE_CHECKING:
    from nemo_runspec.cmdline.recipe_config import RecipeConfig
    from nemo_runspec.spec.models import Runspec
    from nemo_runspec.sweep.invoke import Points


def sweep_here(points: Points, plan: SweepPlan, sweep_id: str, spec: Runspec, cfg: RecipeConfig, *,
               parallel: int | None) -> int:
    """Run (or show) the points here; returns the first failing point's exit code, else 0."""
    from nemo_runspec.sweep import record as rec_mod
    from nemo_runspec.sweep.invoke import point_json, points_table
    from nemo_runspec.sweep.local import run_points

    for point in plan.points[1:]:  # every point compiles (a bad value is found before any runs)
        points.take(point)
    if cfg.dry_run:
        points.run(plan.points[0])
        print(f"\nsweep {sweep_id}: {len(plan.points)} points, run here one after another"
              + (f", {parallel} at a time" if parallel else "") + " (point 0 shown above)")
        print(points_table(plan))
        return 0
    fresh = rec_mod.SweepRecord(id=sweep_id, created=rec_mod.now(), recipe=spec.name, profile=cfg.profile,
                                env_file=str(cfg.ctx.env_file) if cfg.ctx.env_file else None,
                                points=[point_json(p) for p in plan.points])
    old = rec_mod.load(sweep_id)
    done = set() if cfg.ctx.no_resume or old is None else {
        int(i) for i, r in old.local.items() if r.get("exit_code") == 0}
    todo = [p for p in plan.points if p.index not in done]
    if done:
        print(f"[sweep {sweep_id}] {len(done)} of {len(plan.points)} points completed before; running "
              f"{len(todo)} ({', '.join(str(p.index) for p in todo) or 'none'}; --no-resume runs all)",
              file=sys.stderr)
    if not todo:
        return 0

    def on_done(point: Point, code: int, job_dir: str, log: str | None) -> None:
        with rec_mod.updating(sweep_id, fresh) as rec:
            rec.local[str(point.index)] = {"exit_code": code, "job_dir": job_dir, "log": log, "at": rec_mod.now()}

    with rec_mod.updating(sweep_id, fresh):
        pass  # the record exists before the first point runs
    return run_points(lambda p: points.take(p).job, sweep_id, todo, parallel=parallel,
                      log_dir=rec_mod.sweeps_dir() / sweep_id, on_done=on_done)
