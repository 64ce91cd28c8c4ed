"""Benchmark for `scripts/slurm-cluster.sh up` on an already-running cluster.

The cluster script must be idempotent and fast on the second run: a warm `up`
only checks health (munge, MariaDB, slurmdbd, slurmctld, both slurmd, sshd) and
starts nothing. This runs `up` once to make sure the cluster is up (cold or
warm), then times ``--runs`` warm calls and reports median and max. Exits 1
when the warm median is over budget or a warm call restarted a daemon.

    .venv/bin/python bench/bench_cluster_up.py [--runs 5] [--budget-s 5]

Needs root (the cluster writes /etc/slurm) and the Debian packages the script
installs; results go to bench/results/cluster_up.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "slurm-cluster.sh"


def timed_up() -> tuple[float, str]:
    """Seconds taken by one `up`, and its stdout."""
    start = time.perf_counter()
    proc = subprocess.run(["bash", str(SCRIPT), "up"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start, proc.stdout


def main() -> int:
    """Run the benchmark; 0 when within budget, 1 otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=5.0)
    args = parser.parse_args()

    first, _ = timed_up()
    warm, restarted = [], False
    for _ in range(args.runs):
        seconds, out = timed_up()
        warm.append(seconds)
        restarted |= "starting" in out
    median = statistics.median(warm)
    result = {"first_up_s": round(first, 2), "warm_median_s": round(median, 2),
              "warm_max_s": round(max(warm), 2), "runs": args.runs,
              "warm_restarted_a_daemon": restarted}
    print(f"first up: {first:.2f} s; warm up: median {median:.2f} s, max {max(warm):.2f} s "
          f"over {args.runs} runs{'; a warm run restarted a daemon' if restarted else ''}")
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "cluster_up.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0 if median <= args.budget_s and not restarted else 1


if __name__ == "__main__":
    sys.exit(main())
