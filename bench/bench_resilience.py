"""Resilience numbers (docs/resilience.md): heartbeat cost, accounting calls, preemption loss, stall detection.

    .venv/bin/python bench/bench_resilience.py [JOB_DIR ...]

1. The training side's per-step cost (heartbeat ``pwrite``, stop check, rank 0's
   ``steps.jsonl`` line), against an empty loop.
2. ``sacct``/``squeue`` calls of one ``nemotron jobs list`` over 1, 10 and 50
   recorded jobs (real ids from the local cluster's accounting), counted by
   wrappers on ``PATH``.
3. From the job dirs given (default: those the last ``tests/e2e/test_resilience.py``
   run left under pytest's temp dir): seconds from the warning/requeue signal to the
   first finished step of the next attempt, the part of it Slurm held the job
   (requeue delay), and the watchdog's detection delay against ``stall_timeout``.

Writes ``bench/results/resilience.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def heartbeat_cost(n: int = 20000) -> dict[str, float]:
    from nemotron.training.resilience import Resilience

    with tempfile.TemporaryDirectory() as d:
        res = Resilience(d, rank=0)
        t0 = time.perf_counter()
        for step in range(n):
            res.beat(step, "step")
            res.stop_code()
            res.log_step(step, 1.0)
        per_step = (time.perf_counter() - t0) / n
        t0 = time.perf_counter()
        for step in range(n):
            res.beat(step, "step")
        beat_only = (time.perf_counter() - t0) / n
        res.close(n)
    return {"per_step_us": per_step * 1e6, "heartbeat_only_us": beat_only * 1e6, "iterations": n}


def accounting_calls(sizes: tuple[int, ...] = (1, 10, 50)) -> dict[str, dict[str, int]]:
    ids = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "JobID", "-S", "now-7days"], capture_output=True,
                         text=True).stdout.split()
    ids = [i for i in ids if i.isdigit()][-max(sizes):]
    out: dict[str, dict[str, int]] = {}
    for n in sizes:
        with tempfile.TemporaryDirectory() as d:
            home, shims, log = Path(d, "home"), Path(d, "bin"), Path(d, "calls")
            shims.mkdir()
            for tool in ("sacct", "squeue"):
                real = shutil.which(tool)
                (shims / tool).write_text(f"#!/bin/sh\necho {tool} >> {log}\nexec {real} \"$@\"\n")
                (shims / tool).chmod(0o755)
            jobs = home / "jobs"
            jobs.mkdir(parents=True)
            chosen = (ids * n)[:n] if ids else [str(900000 + i) for i in range(n)]
            with open(jobs / "submissions.jsonl", "w") as f:
                for i, job_id in enumerate(chosen):
                    f.write(json.dumps({"v": 1, "job_id": job_id, "name": f"b{i}", "job_dir": f"{d}/j{i}",
                                        "submitted_at": f"2025-01-01T00:00:{i % 60:02d}Z"}) + "\n")
            env = {**os.environ, "NEMOTRON_HOME": str(home), "PATH": f"{shims}:{os.environ['PATH']}"}
            subprocess.run([str(ROOT / ".venv" / "bin" / "nemotron"), "jobs", "list", "-n", "0"], env=env,
                           capture_output=True, text=True, timeout=120)
            calls = log.read_text().split() if log.exists() else []
            out[str(n)] = {"sacct": calls.count("sacct"), "squeue": calls.count("squeue")}
    return out


def _records(res: Path) -> list[dict]:
    path = res / "attempts.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _steps(res: Path) -> list[dict]:
    path = res / "steps.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def from_job_dirs(dirs: list[Path]) -> dict[str, list[dict]]:
    """Preemption losses and stall detection delays of the finished jobs in ``dirs``."""
    lost, stalls = [], []
    for job_dir in dirs:
        res = job_dir / "resilience"
        recs = _records(res)
        ends = [r for r in recs if r["event"] == "end"]
        if not ends:
            continue
        first = ends[0]
        if first["kind"] in ("timelimit", "preempted"):
            signals = res / "signals-a0"
            sig_t = float(signals.read_text().split()[1]) if signals.exists() else None
            stopped = res / "stopped-a0"
            sig_t = sig_t or (stopped.stat().st_mtime if stopped.exists() else first["t"])
            next_steps = [s for s in _steps(res) if s["attempt"] == 1]
            starts = [r for r in recs if r["event"] == "start" and r["attempt"] == 1]
            if next_steps and starts:
                lost.append({"job_dir": str(job_dir), "kind": first["kind"],
                             "signal_to_first_step_s": round(next_steps[0]["t"] - sig_t, 2),
                             "end_to_next_start_s": round(float(starts[0]["t"]) - float(first["t"]), 2),
                             "steps_redone": 0 if next_steps[0]["step"] == int(first["step"]) + 1 else None})
        if first["kind"] == "stall" and (res / "stall-a0").exists():
            fields = (res / "stall-a0").read_text().split()
            stalls.append({"job_dir": str(job_dir), "silent_s_at_detection": int(fields[3]),
                           "stall_timeout_s": int(fields[5])})
    return {"preemption": lost, "stall": stalls}


def _auth_info() -> str:
    """The cluster's ``AuthInfo`` (its ``cred_expire`` is the requeue delay in end_to_next_start_s)."""
    out = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=30).stdout
    return next((ln.split("=", 1)[1].strip() for ln in out.splitlines() if ln.startswith("AuthInfo")), "")


def main(argv: list[str]) -> int:
    dirs = [Path(a) for a in argv]
    if not dirs:
        base = Path(tempfile.gettempdir()) / f"pytest-of-{os.environ.get('USER', 'root')}" / "pytest-current"
        dirs = sorted({p.parent.resolve() for p in base.glob("*/*home/jobs/experiments/*/*/*/resilience")})
    result = {"heartbeat": heartbeat_cost(), "accounting_calls_per_refresh": accounting_calls(),
              "cluster_auth_info": _auth_info(), **from_job_dirs(dirs)}
    out = ROOT / "bench" / "results" / "resilience.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
