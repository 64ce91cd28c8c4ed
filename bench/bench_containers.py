"""Container cost on the local cluster: a one-node step with and without the
pyxis test image, and squashing an image the first time and when it is there.

    .venv/bin/python bench/bench_containers.py [--runs 5]

Needs the cluster with container support (`scripts/slurm-cluster.sh up`, which runs
scripts/containers.sh); results go to bench/results/containers.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATE = Path(os.environ.get("NEMOTRON_SLURM_STATE", "/var/tmp/nemotron-slurm"))
NEMOTRON = ROOT / ".venv" / "bin" / "nemotron"


def timed(cmd: list[str], env: dict | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=600)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    image = (STATE / "container-image").read_text().strip()
    srun = ["srun", "-N1", "-n1", "-p", "debug", "-A", "testacct"]
    bare = [timed([*srun, "python3", "-c", "pass"]) for _ in range(args.runs)]
    boxed = [timed([*srun, f"--container-image={image}", "python3", "-c", "pass"]) for _ in range(args.runs)]

    work = Path(tempfile.mkdtemp(prefix="bench-squash-"))
    try:
        rootfs = work / "rootfs"
        subprocess.run(["unsquashfs", "-q", "-d", str(rootfs), image], check=True, capture_output=True)
        (work / "env.toml").write_text(
            f'[sq]\nexecutor = "slurm"\naccount = "testacct"\npartition = "debug"\n'
            f'squash_dir = "{work / "images"}"\ncontainer_image = "dir://{rootfs}"\n')
        env = {**os.environ, "NEMOTRON_ENV_FILE": str(work / "env.toml"), "NEMOTRON_HOME": str(work / "nh")}
        first = timed([str(NEMOTRON), "kit", "squash", "sq"], env)
        again = [timed([str(NEMOTRON), "kit", "squash", "sq"], env) for _ in range(args.runs)]
    finally:
        shutil.rmtree(work, ignore_errors=True)

    result = {
        "step_bare_metal_s": statistics.median(bare),
        "step_container_s": statistics.median(boxed),
        "container_overhead_s": statistics.median(boxed) - statistics.median(bare),
        "squash_first_s": first,
        "squash_already_there_s": statistics.median(again),
        "runs": args.runs,
        "image": image,
    }
    out = ROOT / "bench" / "results" / "containers.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    for key, value in result.items():
        print(f"{key:26} {value:.2f}" if isinstance(value, float) else f"{key:26} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
