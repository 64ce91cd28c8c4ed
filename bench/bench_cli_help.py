"""Startup benchmark for `nemotron --help` and `nemotron nano3 pretrain --help`.

Runs each command repeatedly as a real subprocess (the installed console
script), reports median and p90 wall time and the number of modules imported,
and checks with ``-X importtime`` that no heavy module (nemo_run, ray, torch,
wandb, omegaconf, pydantic) is imported. Exits 1 when a median is over budget or
a forbidden module is imported.

    .venv/bin/python bench/bench_cli_help.py [--runs 20] [--budget-ms 150]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NEMOTRON = ROOT / ".venv" / "bin" / "nemotron"
COMMANDS = (["--help"], ["nano3", "pretrain", "--help"])
FORBIDDEN = ("nemo_run", "ray", "torch", "wandb", "omegaconf", "pydantic")


def time_runs(argv: list[str], runs: int, env: dict[str, str]) -> list[float]:
    """Wall times in ms of ``runs`` executions (after one warm-up run)."""
    subprocess.run([str(NEMOTRON), *argv], env=env, capture_output=True, check=True)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([str(NEMOTRON), *argv], env=env, capture_output=True, check=True)
        times.append((time.perf_counter() - start) * 1000)
    return times


def imported_modules(argv: list[str], env: dict[str, str]) -> list[str]:
    """Modules imported by one run, from ``-X importtime`` (PYTHONPROFILEIMPORTTIME)."""
    proc = subprocess.run([str(NEMOTRON), *argv], env={**env, "PYTHONPROFILEIMPORTTIME": "1"},
                          capture_output=True, text=True, check=True)
    names = []
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "imported package" not in line:
            names.append(line.rsplit("|", 1)[1].strip())
    return names


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def main() -> int:
    """Run the benchmark; 0 when within budget and clean, 1 otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--budget-ms", type=float, default=150.0)
    args = parser.parse_args()
    if not NEMOTRON.exists():
        print(f"missing {NEMOTRON}: run .venv/bin/pip install -e . --no-deps", file=sys.stderr)
        return 1
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEMOTRON_", "PYTHONPROFILE"))}
    failed = False
    print(f"{'command':32} {'median':>8} {'p90':>8} {'min':>8} {'modules':>8}  forbidden")
    for argv in COMMANDS:
        times = time_runs(argv, args.runs, env)
        modules = imported_modules(argv, env)
        heavy = sorted({m.split(".")[0] for m in modules} & set(FORBIDDEN))
        median = statistics.median(times)
        over = median > args.budget_ms
        failed |= over or bool(heavy)
        label = "nemotron " + " ".join(argv)
        print(f"{label:32} {median:7.1f}ms {percentile(times, 0.9):7.1f}ms {min(times):7.1f}ms "
              f"{len(modules):8d}  {', '.join(heavy) or '-'}{'  OVER BUDGET' if over else ''}")
    print(f"budget: median <= {args.budget_ms:.0f} ms, {args.runs} runs each, {os.cpu_count()} cpus")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
