"""Startup benchmark for `nemotron --help` and `nemotron nano3 pretrain --help`.

Runs each command repeatedly as a real subprocess (the installed console
script), each run paired with one of the floor ``python -c "import typer,
rich"`` (alternating order: the machine may be shared), reports median and p90
wall time, the ratio of the medians to the floor's, and the number of modules
imported, and checks with ``-X importtime`` that no heavy module (nemo_run, ray,
torch, wandb, omegaconf, pydantic, bokeh, playwright) is imported. Exits 1 when a median is over
budget, a ratio over ``--max-ratio``, or a forbidden module is imported. Writes
``bench/results/cli_help.json``. ``PYTHONDONTWRITEBYTECODE`` is not passed on:
the warm-up run writes the ``.pyc`` files an installed package has (with it set,
every run would compile each module edited since its ``.pyc`` was written).

    .venv/bin/python bench/bench_cli_help.py [--runs 20] [--budget-ms 150] [--max-ratio 1.6] [--src DIR]

``--src DIR`` measures another source tree of the project (e.g. an older commit
exported with ``git archive``) with the same venv, through ``PYTHONPATH``;
``--label`` writes ``cli_help-<label>.json`` instead.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NEMOTRON = ROOT / ".venv" / "bin" / "nemotron"
COMMANDS = (["--help"], ["nano3", "pretrain", "--help"])
FORBIDDEN = ("nemo_run", "ray", "torch", "wandb", "omegaconf", "pydantic", "bokeh", "playwright")
FLOOR = [str(ROOT / ".venv" / "bin" / "python"), "-c", "import typer, rich"]


def _time(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, capture_output=True, check=True)
    return (time.perf_counter() - start) * 1000


def time_runs(argv: list[str], runs: int, env: dict[str, str]) -> tuple[list[float], list[float]]:
    """Wall times in ms of ``runs`` executions (after one warm-up run), and of the
    floor command run next to each of them (before or after, alternating)."""
    cmd = [str(NEMOTRON), *argv]
    _time(cmd, env)
    times, floor = [], []
    for i in range(runs):
        if i % 2:
            times.append(_time(cmd, env))
            floor.append(_time(FLOOR, env))
        else:
            floor.append(_time(FLOOR, env))
            times.append(_time(cmd, env))
    return times, floor


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
    parser.add_argument("--max-ratio", type=float, default=1.6,
                        help="largest median / floor median allowed")
    parser.add_argument("--src", type=Path, help="another source tree of the project to measure")
    parser.add_argument("--label", default="", help="suffix of the results file")
    args = parser.parse_args()
    if not NEMOTRON.exists():
        print(f"missing {NEMOTRON}: run .venv/bin/pip install -e . --no-deps", file=sys.stderr)
        return 1
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NEMOTRON_", "PYTHONPROFILE")) and k != "PYTHONDONTWRITEBYTECODE"}
    if args.src is not None:
        env["PYTHONPATH"] = str(args.src.resolve())
    failed = False
    rows = []
    print(f"{'command':32} {'median':>8} {'p90':>8} {'min':>8} {'floor':>8} {'ratio':>6} {'modules':>8}  forbidden")
    for argv in COMMANDS:
        times, floor = time_runs(argv, args.runs, env)
        modules = imported_modules(argv, env)
        heavy = sorted({m.split(".")[0] for m in modules} & set(FORBIDDEN))
        median, floor_median = statistics.median(times), statistics.median(floor)
        ratio = median / floor_median
        over = median > args.budget_ms or ratio > args.max_ratio
        failed |= over or bool(heavy)
        label = "nemotron " + " ".join(argv)
        print(f"{label:32} {median:7.1f}ms {percentile(times, 0.9):7.1f}ms {min(times):7.1f}ms "
              f"{floor_median:7.1f}ms {ratio:6.2f} {len(modules):8d}  {', '.join(heavy) or '-'}"
              f"{'  OVER BUDGET' if over else ''}")
        rows.append({"command": label, "median_ms": round(median, 1), "min_ms": round(min(times), 1),
                     "p90_ms": round(percentile(times, 0.9), 1), "floor_command": "python -c 'import typer, rich'",
                     "floor_median_ms": round(floor_median, 1), "ratio": round(ratio, 3),
                     "modules": len(modules), "forbidden": heavy})
    print(f"budget: median <= {args.budget_ms:.0f} ms and <= {args.max_ratio}x the floor, "
          f"{args.runs} runs each, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}")
    out = ROOT / "bench" / "results" / (f"cli_help-{args.label}.json" if args.label else "cli_help.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "bench/bench_cli_help.py", "argv": sys.argv[1:],
                               "src": str(args.src.resolve() if args.src else ROOT / "src"), "runs": args.runs,
                               "cpus": os.cpu_count(), "loadavg_at_end": list(os.getloadavg()),
                               "note": "shared machine; compare ratios to the paired floor",
                               "results": rows}, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
