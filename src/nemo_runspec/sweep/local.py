"""A sweep's points run on this machine: one after another, or ``--parallel N`` at once.

Each point is compiled by its recipe command (every check it makes) and run as
that command would run it (:func:`~nemo_runspec.execution.run_local`), in a job
dir of its own, with ``run.sweep`` in its config and ``NEMOTRON_SWEEP_*`` in its
environment (what an artifact it publishes records). One after another, each
point's output streams here as a single run's does. With ``--parallel N`` up to
N points run at once, each in a child process whose output goes to
``$NEMOTRON_HOME/sweeps/<id>/point-<N>.log``; a line says when each starts and
ends. A failing point does not stop the others. The exit code is the first
failing point's (0 when all completed).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nemo_runspec.config.sweep import Point


def point_env(sweep_id: str, point: Point) -> dict[str, str]:
    """What a point's job is told about its sweep (an artifact it publishes records it)."""
    from nemo_runspec.secrets import redact_text
    from nemo_runspec.sweep.points import sweep_meta

    meta = sweep_meta(sweep_id, point)
    return {"NEMOTRON_SWEEP_ID": sweep_id, "NEMOTRON_SWEEP_INDEX": str(point.index),
            "NEMOTRON_SWEEP_VALUES": json.dumps({"sweep": sweep_id, "index": point.index, "values": meta["values"],
                                                 "overrides": [redact_text(o) for o in point.overrides]})}


def run_point(compile_point: Callable[[Point], Any], sweep_id: str, point: Point) -> tuple[int, str]:
    """Compile ``point`` (``compile_point`` returns its CompiledJob) and run it here;
    ``(exit code, job dir)``."""
    from omegaconf import DictConfig, OmegaConf

    from nemo_runspec.config import generate_job_dir
    from nemo_runspec.execution.local import run_local
    from nemo_runspec.sweep.points import sweep_meta

    job = compile_point(point)
    config = OmegaConf.create(OmegaConf.to_container(job.job_config, resolve=False))
    assert isinstance(config, DictConfig)  # a dict makes a DictConfig
    OmegaConf.update(config, "run.sweep", sweep_meta(sweep_id, point), force_add=True)
    job_dir = generate_job_dir(job.runspec.name)
    print(f"[sweep {sweep_id}] point {point.index}: {point.label()}", file=sys.stderr, flush=True)
    code = run_local(job, extra_env=point_env(sweep_id, point), job_config=config, job_dir=job_dir)
    return code, str(job_dir)


def run_points(compile_point: Callable[[Point], Any], sweep_id: str, points: Sequence[Point], *,
               parallel: int | None, log_dir: Path,
               on_done: Callable[[Point, int, str, str | None], None]) -> int:
    """Run ``points``; ``on_done(point, exit code, job dir, log)`` after each. Returns the
    first failing point's exit code (in point order), else 0."""
    codes: dict[int, int] = {}
    if not parallel or parallel <= 1 or len(points) <= 1:
        for point in points:
            try:
                code, job_dir = run_point(compile_point, sweep_id, point)
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # noqa: BLE001 - one point's failure does not stop the others
                from nemo_runspec.errors import NemoRunspecError

                if not isinstance(exc, NemoRunspecError):
                    raise
                print(f"error: point {point.index}: {exc}", file=sys.stderr, flush=True)
                code, job_dir = 1, ""
            codes[point.index] = code
            on_done(point, code, job_dir, None)
            _say(sweep_id, point, code)
        return _first_failure(codes, points)
    return _run_forked(compile_point, sweep_id, points, parallel, log_dir, on_done)


def _say(sweep_id: str, point: Point, code: int, log: str | None = None) -> None:
    what = "completed" if code == 0 else f"failed (exit {code})"
    where = f"; log {log}" if log else ""
    print(f"[sweep {sweep_id}] point {point.index} {what}{where}", file=sys.stderr, flush=True)


def _first_failure(codes: dict[int, int], points: Sequence[Point]) -> int:
    return next((codes[p.index] for p in points if codes.get(p.index, 0) != 0), 0)


def _run_forked(compile_point: Callable[[Point], Any], sweep_id: str, points: Sequence[Point],
                parallel: int, log_dir: Path, on_done: Callable[[Point, int, str, str | None], None]) -> int:
    """Up to ``parallel`` points at once, each in a forked child with its output in a log."""
    log_dir.mkdir(parents=True, exist_ok=True)
    pending = list(points)
    running: dict[int, tuple[Point, Path]] = {}
    codes: dict[int, int] = {}
    try:
        while pending or running:
            while pending and len(running) < parallel:
                point = pending.pop(0)
                log = log_dir / f"point-{point.index}.log"
                pid = _fork_point(compile_point, sweep_id, point, log)
                running[pid] = (point, log)
                print(f"[sweep {sweep_id}] point {point.index} started ({point.label()}); log {log}",
                      file=sys.stderr, flush=True)
            pid, status = os.wait()
            if pid not in running:
                continue
            point, log = running.pop(pid)
            code = os.waitstatus_to_exitcode(status)
            code = 128 - code if code < 0 else code  # killed by a signal: 128 + signal
            codes[point.index] = code
            job_dir = _job_dir_from(log)
            on_done(point, code, job_dir, str(log))
            _say(sweep_id, point, code, str(log))
    except KeyboardInterrupt:
        for pid in running:  # they got the SIGINT too (same process group); wait for them
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        raise
    return _first_failure(codes, points)


def _fork_point(compile_point: Callable[[Point], Any], sweep_id: str, point: Point, log: Path) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:  # the child: its output into the point's log, then its exit code
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        code, _ = run_point(compile_point, sweep_id, point)
    except KeyboardInterrupt:
        code = 130
    except BaseException as exc:  # noqa: BLE001 - reported in the point's log, never past the fork
        print(f"error: {exc}", file=sys.stderr)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return 0  # not reached


def _job_dir_from(log: Path) -> str:
    """The job dir a point's run named in its log (``job dir: ...``), or ""."""
    try:
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("job dir: "):
                return line[len("job dir: "):].strip()
    except OSError:
        pass
    return ""
