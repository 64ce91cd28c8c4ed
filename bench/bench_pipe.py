"""The tiny nano3 pipe: wall time here and on the test cluster, and time to submit it.

    .venv/bin/python bench/bench_pipe.py [--no-cluster]

Each measurement starts from an empty NEMOTRON_HOME and artifact registry:

- local: `nemotron nano3 pipe -c tiny` (every stage here), then the rerun that
  skips every stage;
- cluster (needs `scripts/slurm-cluster.sh up`): `--batch` until the command
  returns with every stage submitted, then until the last stage has finished
  (sacct), and the rerun that submits nothing; then the same chain in one
  allocation (`--launcher sbatch`) from submission until it has finished.

Results go to bench/results/pipe.json with the commands that produced them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NEMOTRON = ROOT / ".venv" / "bin" / "nemotron"
PROFILE = """\
[cluster]
executor = "slurm"
account = "testacct"
partition = "debug"
batch_partition = "batch"
container_image = ""
gpus_per_node = 0
nodes = 1
time = "00:10:00"
"""


def sandbox() -> tuple[Path, dict[str, str]]:
    work = Path(tempfile.mkdtemp(prefix="bench-pipe-", dir="/tmp"))
    (work / "env.toml").write_text(PROFILE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(work / "nh"), NEMOTRON_ENV_FILE=str(work / "env.toml"),
               NEMOTRON_ARTIFACTS_ROOT=str(work / "registry"), NEMORUN_HOME=str(work / "nh" / "nemorun"))
    return work, env


def timed(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run([str(NEMOTRON), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"nemotron {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return time.perf_counter() - start, proc.stdout


TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL",
            "DEADLINE", "PREEMPTED")


def finished(job_ids: list[str]) -> bool:
    """True once every job has ended, all COMPLETED; a job that ended otherwise stops the
    bench (its time would not be the chain's)."""
    out = subprocess.run(["sacct", "-n", "-X", "-P", "-j", ",".join(job_ids), "-o", "JobID,State"],
                         capture_output=True, text=True).stdout.split()
    states = dict(line.split("|", 1) for line in out if "|" in line)
    states = {job: state.split()[0] for job, state in states.items() if state}
    if len(states) < len(job_ids) or not all(s in TERMINAL for s in states.values()):
        return False
    bad = {job: state for job, state in states.items() if state != "COMPLETED"}
    if bad:
        raise SystemExit(f"the chain did not complete: {bad}")
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-cluster", action="store_true")
    args = parser.parse_args()
    result: dict[str, object] = {"machine": f"{os.cpu_count()} cores", "config": "tiny",
                                 "load_1min_at_start": os.getloadavg()[0]}

    work, env = sandbox()
    try:
        result["local_chain_s"], _ = timed(["nano3", "pipe", "-c", "tiny"], env, work)
        result["local_rerun_all_skipped_s"], _ = timed(["nano3", "pipe", "-c", "tiny"], env, work)
        result["local_command"] = "nemotron nano3 pipe -c tiny"
    finally:
        shutil.rmtree(work, ignore_errors=True)

    if not args.no_cluster:
        work, env = sandbox()
        try:
            start = time.perf_counter()
            submit_s, out = timed(["nano3", "pipe", "-c", "tiny", "--batch", "cluster"], env, work)
            ids = [s["job_id"] for s in json.loads(out)["stages"]]  # --batch: the chain's JSON line
            while not finished(ids):
                time.sleep(0.5)
            result["cluster_submit_all_stages_s"] = submit_s
            result["cluster_stages"] = len(ids)
            result["cluster_chain_s"] = time.perf_counter() - start
            result["cluster_rerun_nothing_submitted_s"], _ = timed(
                ["nano3", "pipe", "-c", "tiny", "--batch", "cluster"], env, work)
            result["cluster_command"] = "nemotron nano3 pipe -c tiny --batch cluster (2-node test cluster)"
        finally:
            shutil.rmtree(work, ignore_errors=True)
        work, env = sandbox()
        try:  # the same chain in one allocation (--launcher sbatch)
            start = time.perf_counter()
            submit_s, out = timed(["nano3", "pipe", "-c", "tiny", "--batch", "cluster", "--launcher", "sbatch"],
                                  env, work)
            stages = json.loads(out)["stages"]
            ids = sorted({s["job_id"] for s in stages})  # one allocation: every stage has its id
            while not finished(ids):
                time.sleep(0.5)
            result["allocation_submit_s"] = submit_s
            result["allocation_stages"] = len(stages)
            result["allocation_chain_s"] = time.perf_counter() - start
            result["allocation_command"] = "nemotron nano3 pipe -c tiny --batch cluster --launcher sbatch"
        finally:
            shutil.rmtree(work, ignore_errors=True)

    result["load_1min_at_end"] = os.getloadavg()[0]  # other work on the machine slows every figure
    out_path = ROOT / "bench" / "results" / "pipe.json"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
