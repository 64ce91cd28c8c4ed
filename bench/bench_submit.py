"""Benchmark: time from command to `sbatch` for a batch submission, and dry-run time.

Needs the local Slurm cluster (scripts/slurm-cluster.sh up). Prints a table and
writes bench/results/submit.json. Run: .venv/bin/python bench/bench_submit.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace as NS

T0 = time.perf_counter()


def main() -> dict[str, float]:
    """Run one dry run and one batch submission, return timings in seconds."""
    timings: dict[str, float] = {}
    t = time.perf_counter()
    from nemo_runspec._nemo_run import lean

    lean()  # the parts of nemo-run a Slurm job uses, not `import nemo_run`
    from nemo_run.core.packaging.base import Packager

    timings["import_nemo_run_parts"] = time.perf_counter() - t
    from nemo_runspec.slurm import prepare_job, render_sbatch, submit_detached

    tmp = Path(tempfile.mkdtemp(prefix="bench-submit-"))
    script = tmp / "hello.py"
    script.write_text("print('bench')\n")
    spec = NS(name="bench/submit", image=None, run=NS(launch="direct"),
              resources=NS(nodes=1, gpus_per_node=0), env={})
    prof = {"executor": "slurm", "account": "testacct", "partition": "debug",
            "container_image": "", "gpus_per_node": 0, "time": "00:02:00"}

    t = time.perf_counter()
    job = prepare_job(env=prof, mode="batch", runspec=spec, packager=Packager(),
                      script=str(script), base_dir=tmp / "jobs",
                      secrets={"BENCH_TOKEN": "bench-secret-value"})
    job.entrypoint = sys.executable
    timings["build_executor"] = time.perf_counter() - t

    t = time.perf_counter()
    render_sbatch(job)
    timings["dry_run"] = time.perf_counter() - t

    t = time.perf_counter()
    sub = submit_detached(job)  # packaging (no-op packager) + secrets + sbatch
    timings["package_and_sbatch"] = time.perf_counter() - t
    timings["command_to_sbatch_total"] = time.perf_counter() - T0
    timings["job_id"] = float(sub.job_id)
    return timings


if __name__ == "__main__":
    result = main()
    for k, v in result.items():
        print(f"{k:28} {v:10.3f}" + ("" if k == "job_id" else " s"))
    out = Path(__file__).parent / "results" / "submit.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
