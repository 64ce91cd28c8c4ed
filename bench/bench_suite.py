"""The whole test suite's wall time, and the CPU time it needs (issue 12's 5-minute target).

    CI=true .venv/bin/python bench/bench_suite.py [--name NAME] [-- COMMAND ...]

Runs COMMAND (default ``bash scripts/test.sh``, what CI runs; the cluster is already up,
so its start-up is not counted) once, reading ``/proc/stat`` before and after. The
machine's busy CPU time over the run (user + nice + system + irq + softirq, every
process: pytest, its workers, and the Slurm jobs the cluster tests start, which run
under slurmd and not under pytest) gives the suite's CPU floor: busy seconds divided by
the cores, the wall time no schedule of the same work can beat on this machine. The
streams' own times come from test.sh's summary line.

Writes ``bench/results/NAME.json`` (default ``suite``) and the command's whole output to
``$TMPDIR/bench-NAME.log``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq = fields[:7]
    steal = fields[7] if len(fields) > 7 else 0
    busy = user + nice + system + irq + softirq
    return busy, busy + idle + iowait + steal


DAEMONS = ("slurmctld", "slurmd", "slurmdbd", "mariadbd", "mysqld", "munged", "sshd", "dockerd", "containerd")


def daemon_ticks() -> dict[int, tuple[str, int]]:
    """pid -> (name, utime + stime jiffies) of the cluster's long-running daemons."""
    out: dict[int, tuple[str, int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        if name in DAEMONS:
            fields = stat[stat.rindex(")") + 2:].split()
            out[int(entry.name)] = (name, int(fields[11]) + int(fields[12]))
    return out


def main(argv: list[str]) -> int:
    command = argv[argv.index("--") + 1:] if "--" in argv else ["bash", "scripts/test.sh"]
    options = argv[:argv.index("--")] if "--" in argv else argv
    name = options[options.index("--name") + 1] if "--name" in options else "suite"
    hz = os.sysconf("SC_CLK_TCK")
    cores = os.cpu_count() or 1
    daemons0 = daemon_ticks()
    busy0, total0 = cpu_ticks()
    t0 = time.monotonic()
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    busy1, total1 = cpu_ticks()
    daemons: dict[str, float] = {}
    for pid, (daemon, ticks) in daemon_ticks().items():
        if pid in daemons0:  # alive for the whole run
            daemons[daemon] = daemons.get(daemon, 0.0) + (ticks - daemons0[pid][1]) / hz
    busy_s = (busy1 - busy0) / hz
    summary = next((ln for ln in proc.stdout.splitlines()[::-1] if ln.startswith("scripts/test.sh: tests without")),
                   "")
    streams = {name: int(secs) for name, secs in
               re.findall(r"(tests without the cluster|cluster tests): exit \d+ \((\d+) s", summary)}
    passed = [int(n) for n in re.findall(r"(\d+) passed", proc.stdout)]
    result = {
        "command": " ".join(command),
        "exit_code": proc.returncode,
        "wall_s": round(wall, 1),
        "cpu_busy_s": round(busy_s, 1),
        "cores": cores,
        "cpu_floor_s": round(busy_s / cores, 1),
        "cpu_utilisation": round((busy1 - busy0) / max(1, total1 - total0), 3),
        "streams_s": streams,
        "daemons_cpu_s": {k: round(v, 1) for k, v in sorted(daemons.items())},
        "tests_passed": sum(passed),
        "summary_line": summary,
        "target_s": 300,
    }
    out = ROOT / "bench" / "results" / f"{name}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-{name}.log"
    log.write_text(proc.stdout + proc.stderr)
    print(f"whole output: {log}", file=sys.stderr)
    if proc.returncode:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-2000:])
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
