"""A 100-point sweep against one submission, on the test cluster (docs/sweeps.md).

    .venv/bin/python bench/bench_sweep.py [--points 100] [--repeat 3]

Needs `scripts/slurm-cluster.sh up`. In a fresh NEMOTRON_HOME with the tiny
pretrain data prepared here, it times (wall clock, from the command's start to its
exit, and CPU seconds of the command and its children; medians of ``--repeat``):

- one submission: ``nemotron nano3 pretrain -c tiny --batch held``;
- a sweep: ``nemotron nano3 pretrain -c tiny -m train.train_iters=range(N) --batch held``;

with ``sbatch`` and ``sacct`` wrapped by scripts on PATH that count their calls and exec
the real ones. The profile holds its jobs an hour (``begin = now+1hour``), so nothing
runs and the jobs are cancelled at the end. Then ``nemotron jobs list`` once, counting its
``sacct`` calls. The targets (issue 32): one sbatch per sweep, the sweep at most 1.5x the
single submission, one accounting call for `jobs list`.

Results go to bench/results/sweep.json with the commands that produced them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NEMOTRON = ROOT / ".venv" / "bin" / "nemotron"
PROFILE = """\
[held]
executor = "slurm"
account = "testacct"
partition = "debug"
container_image = ""
gpus_per_node = 0
time = "00:05:00"
sbatch_options = { begin = "now+1hour" }
"""


def sandbox() -> tuple[Path, dict[str, str], Path]:
    work = Path(tempfile.mkdtemp(prefix="bench-sweep-", dir="/tmp"))
    (work / "env.toml").write_text(PROFILE)
    log = work / "calls.log"
    (work / "bin").mkdir()
    for name in ("sbatch", "sacct"):
        real = shutil.which(name)
        if real is None:
            raise SystemExit(f"{name} is not installed: bring the cluster up (scripts/slurm-cluster.sh up)")
        (work / "bin" / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\nexec {real} "$@"\n')
        (work / "bin" / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(work / "nh"), NEMOTRON_ENV_FILE=str(work / "env.toml"),
               NEMOTRON_ARTIFACTS_ROOT=str(work / "registry"), NEMORUN_HOME=str(work / "nh" / "nemorun"),
               PATH=f"{work / 'bin'}:{os.environ['PATH']}")
    return work, env, log


CPU: list[float] = []  # CPU seconds (user + sys) of each run and its children: less load-sensitive


def run(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([str(NEMOTRON), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=1800)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"nemotron {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return took, proc.stdout


def calls(log: Path, name: str) -> int:
    return sum(1 for c in log.read_text().splitlines() if c.startswith(name + " ")) if log.exists() else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    work, env, log = sandbox()
    single = ["nano3", "pretrain", "-c", "tiny", "--batch", "held"]
    sweep = [*single, "-m", f"train.train_iters=range({args.points})"]
    ids: list[str] = []
    result: dict[str, object] = {"machine": f"{os.cpu_count()} cores", "points": args.points,
                                 "load_1min_at_start": os.getloadavg()[0]}
    try:
        run(["nano3", "data", "prep", "pretrain", "-c", "tiny"], env, work)  # here: the tiny data artifact
        single_s, sweep_s, sbatch_per_sweep, single_cpu, sweep_cpu = [], [], [], [], []
        for _ in range(args.repeat):  # alternated, so a change in the machine's load hits both alike
            took, out = run(single, env, work)
            single_s.append(took)
            single_cpu.append(CPU[-1])
            ids.append(json.loads(out.strip().splitlines()[-1])["job_id"])
            before = calls(log, "sbatch")
            took, out = run([*sweep, "--no-resume"], env, work)
            sweep_s.append(took)
            sweep_cpu.append(CPU[-1])
            sbatch_per_sweep.append(calls(log, "sbatch") - before)
            record = json.loads(out.strip().splitlines()[-1])
            ids += [a["job_id"] for a in record["arrays"]]
            assert len(record["points"]) == args.points, record["points"][-1]
        before = calls(log, "sacct")
        list_s, listing = run(["jobs", "list"], env, work)
        result.update(
            single_submission_s=statistics.median(single_s), single_submission_all_s=single_s,
            sweep_submission_s=statistics.median(sweep_s), sweep_submission_all_s=sweep_s,
            ratio=statistics.median(sweep_s) / statistics.median(single_s),
            single_submission_cpu_s=statistics.median(single_cpu), sweep_submission_cpu_s=statistics.median(sweep_cpu),
            cpu_ratio=statistics.median(sweep_cpu) / statistics.median(single_cpu),
            sbatch_calls_per_sweep=sbatch_per_sweep,
            jobs_list_s=list_s, jobs_list_sacct_calls=calls(log, "sacct") - before,
            jobs_list_first_line=listing.splitlines()[1] if len(listing.splitlines()) > 1 else listing,
            commands={"single": "nemotron " + " ".join(single), "sweep": "nemotron " + " ".join(sweep),
                      "list": "nemotron jobs list"},
        )
    finally:
        if ids:
            subprocess.run(["scancel", *ids], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    result["load_1min_at_end"] = os.getloadavg()[0]  # other work on the machine slows every figure
    result["targets_met"] = (all(n == 1 for n in result["sbatch_calls_per_sweep"])  # type: ignore[union-attr]
                             and result["ratio"] <= 1.5 and result["jobs_list_sacct_calls"] == 1)  # type: ignore[operator]
    out_path = ROOT / "bench" / "results" / "sweep.json"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0 if result["targets_met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
