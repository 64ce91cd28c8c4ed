"""Benchmark: how fast `nemotron` launches a Slurm job (torchrun and Ray).

Measures, as real subprocesses of the installed console script:

- ``--dry-run``: the whole command (wall time);
- ``--batch``: from spawning the command until ``sbatch`` is called;
- ``--run``: from spawning the command until the first ``squeue`` call (the
  queue display).

No cluster is needed: a directory of fake ``sbatch``/``squeue``/``sacct``/
``scancel`` scripts is put first on PATH; each appends the time it was called
to a log (``sbatch`` answers job 4242, ``sacct`` says it COMPLETED). The recipes
are ``nano3 pretrain -c tiny`` (torchrun) and ``nano3 rl -c tiny`` (Ray) with
their default packager (``code``: the working tree, cached after the first run)
and a container profile; their artifacts are published to a scratch
``$NEMOTRON_HOME`` first.

The machine is shared: every measured run is paired with a run of a floor
command right before or after it (alternating), and the report gives medians
of both and of the difference. Floors: ``python -c "import typer, rich"`` and
the minimal nemo-run import a Slurm job needs. A check with ``-X importtime``
lists heavy modules (torch, Lepton, nemo-run's Experiment) the dry run imports.
Exits 1 when a median is over ``--budget-s`` or a heavy module is imported.

    .venv/bin/python bench/bench_launch.py [--runs 9] [--budget-s 1.0] [--src DIR]

``--src DIR`` measures another source tree of the project (e.g. an older commit
exported with ``git archive``) with the same venv. Writes
``bench/results/launch.json`` (``launch-<label>.json`` with ``--label``), each
number with the command that produced it.
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
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ROOT / ".venv" / "bin" / "python"
NEMOTRON = ROOT / ".venv" / "bin" / "nemotron"
HEAVY = ("torch", "leptonai", "fastapi", "nemo_run.run.experiment", "nemo_run.core.execution.lepton",
         "nemo_run.core.execution.docker", "nemo_run.core.serialization.yaml")

ENV_TOML = """
[gpu]
executor = "slurm"
account = "testacct"
partition = "batch"
nodes = 2
gpus_per_node = 8
container_image = "nvcr.io/nvidia/nemo:25.07"
mounts = ["/lustre:/lustre"]
startup_commands = ["echo node $(hostname)"]
env_vars = { NCCL_DEBUG = "WARN" }
"""

FAKE = """#!/bin/sh
printf '%s {name}\\n' "$(date +%s.%N)" >> "$FAKE_SLURM_LOG"
{body}
"""
FAKE_BODIES = {
    "sbatch": "echo 4242",
    "squeue": "",  # the job already left the queue
    "sacct": 'echo "4242|COMPLETED|0:0|2026-01-01T00:00:00|2026-01-01T00:00:01|n1"',
    "scancel": "",
}

#: the module of the lean path: nemo_runspec/_nemo_run.py (execution/_nemo_run.py in older trees)
LEAN_MODULES = ("_nemo_run", "execution._nemo_run")
LEAN_IMPORT = ("from nemo_runspec.{module} import lean; lean(); "
               "import nemo_run.core.execution.slurm, nemo_run.run.torchx_backend.components.torchrun")


def sandbox(tmp: Path, src: Path | None) -> dict[str, str]:
    """Scratch NEMOTRON_HOME with the recipes' artifacts, env.toml, fake Slurm tools."""
    home = tmp / "home"
    (tmp / "bin").mkdir(parents=True)
    for name, body in FAKE_BODIES.items():
        path = tmp / "bin" / name
        path.write_text(FAKE.format(name=name, body=body))
        path.chmod(0o755)
    (tmp / "env.toml").write_text(ENV_TOML)
    # Without PYTHONDONTWRITEBYTECODE: the warm-up writes the .pyc files an installed
    # package has (with it set, each run would compile every module edited since).
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NEMOTRON_", "PYTHONPROFILE")) and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(NEMOTRON_HOME=str(home), NEMORUN_HOME=str(tmp / "nemorun"), COLUMNS="200",
               PATH=f"{tmp / 'bin'}{os.pathsep}{env.get('PATH', '')}",
               FAKE_SLURM_LOG=str(tmp / "slurm.log"), NEMOTRON_ENV_FILE=str(tmp / "env.toml"))
    if src is not None:
        env["PYTHONPATH"] = str(src)
    payload = tmp / "payload"
    payload.mkdir()
    publish = textwrap.dedent("""
        import sys
        from nemo_runspec.artifacts.registry import ArtifactRegistry
        reg = ArtifactRegistry()
        for name in sys.argv[2:]:
            reg.publish(name, sys.argv[1])
    """)
    subprocess.run([str(PYTHON), "-c", publish, str(payload), "nano3-pretrain-data-tiny",
                    "nano3-rl-data-tiny", "nano3-sft-model-tiny"], env=env, check=True)
    return env


def slurm_calls(env: dict[str, str]) -> list[tuple[float, str]]:
    log = Path(env["FAKE_SLURM_LOG"])
    if not log.exists():
        return []
    calls = []
    for line in log.read_text().splitlines():
        stamp, _, name = line.partition(" ")
        calls.append((float(stamp), name.strip()))
    return calls


def measure(argv: list[str], env: dict[str, str], until: str | None) -> float:
    """Seconds from spawn to the end of the command, or to the first call of fake ``until``."""
    Path(env["FAKE_SLURM_LOG"]).unlink(missing_ok=True)
    start_wall = time.time()
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=ROOT)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    if until is None:
        return elapsed
    stamps = [t for t, name in slurm_calls(env) if name == until]
    if not stamps:
        raise RuntimeError(f"{' '.join(argv)} never called {until}")
    return stamps[0] - start_wall


def heavy_imports(argv: list[str], env: dict[str, str]) -> list[str]:
    proc = subprocess.run(argv, env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, capture_output=True,
                          text=True, cwd=ROOT)
    names = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
             if line.startswith("import time:") and "|" in line}
    # the heavy entry each module falls under (torch.nn -> torch): a short list
    return sorted({h for n in names for h in HEAVY if n == h or n.startswith(h + ".")})


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"median_s": round(statistics.median(values), 4), "min_s": round(ordered[0], 4),
            "max_s": round(ordered[-1], 4), "runs": len(values)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--budget-s", type=float, default=1.0)
    parser.add_argument("--src", type=Path, help="another source tree of the project to measure")
    parser.add_argument("--label", default="", help="suffix of the results file")
    parser.add_argument("--only", default="", help="run only scenarios whose name contains this")
    args = parser.parse_args()
    src = args.src.resolve() if args.src else None

    tmp = Path(tempfile.mkdtemp(prefix="bench-launch-"))
    try:
        env = sandbox(tmp, src)
        nem = [str(NEMOTRON)]
        floors = {"import typer, rich": [str(PYTHON), "-c", "import typer, rich"]}
        tree = src if src is not None else ROOT / "src"
        lean = [m for m in LEAN_MODULES if tree.joinpath("nemo_runspec", *m.split(".")).with_suffix(".py").exists()]
        if lean:
            floors["lean nemo-run import"] = [str(PYTHON), "-c", LEAN_IMPORT.format(module=lean[0])]
        else:
            # a tree from before the lean path: its nemo-run import is all of nemo-run
            floors["import nemo_run"] = [str(PYTHON), "-c", "import nemo_run"]
        scenarios = [
            ("dry-run torchrun", nem + ["nano3", "pretrain", "-c", "tiny", "--dry-run", "--batch", "gpu"], None),
            ("dry-run ray", nem + ["nano3", "rl", "-c", "tiny", "--dry-run", "--batch", "gpu"], None),
            ("batch torchrun, to sbatch", nem + ["nano3", "pretrain", "-c", "tiny", "--batch", "gpu"], "sbatch"),
            ("batch ray, to sbatch", nem + ["nano3", "rl", "-c", "tiny", "--batch", "gpu"], "sbatch"),
            ("run torchrun, to queue display", nem + ["nano3", "pretrain", "-c", "tiny", "--run", "gpu"], "squeue"),
            ("run ray, to queue display", nem + ["nano3", "rl", "-c", "tiny", "--run", "gpu"], "squeue"),
        ]
        scenarios = [s for s in scenarios if args.only in s[0]]
        for _name, argv, until in scenarios:  # warm-up: .pyc files, the packaging cache
            measure(argv, env, until)
        floor_times: dict[str, list[float]] = {k: [] for k in floors}
        results = []
        failed = False
        for name, argv, until in scenarios:
            times, paired = [], []
            for i in range(args.runs):
                floor_argv = floors["import typer, rich"]
                if i % 2:
                    t = measure(argv, env, until)
                    f = measure(floor_argv, env, None)
                else:
                    f = measure(floor_argv, env, None)
                    t = measure(argv, env, until)
                times.append(t)
                paired.append(t - f)
                floor_times["import typer, rich"].append(f)
                for other in list(floors)[1:]:
                    floor_times[other].append(measure(floors[other], env, None))
            heavy = heavy_imports(argv, env) if until != "squeue" else []
            over = statistics.median(times) > args.budget_s
            failed |= over or bool(heavy)
            results.append({
                "name": name, "command": "nemotron " + " ".join(argv[1:]),
                "measured": "wall time" if until is None else f"spawn -> first `{until}` call",
                **summary(times), "median_minus_floor_s": round(statistics.median(paired), 4),
                "heavy_imports": heavy, "over_budget": over,
            })
            r = results[-1]
            print(f"{name:32} median {r['median_s']:6.3f}s  min {r['min_s']:6.3f}s  "
                  f"max {r['max_s']:6.3f}s  (floor-paired +{r['median_minus_floor_s']:.3f}s)"
                  f"{'  heavy: ' + ', '.join(heavy) if heavy else ''}{'  OVER BUDGET' if over else ''}")
        floor_rows = [{"name": k, "command": "python " + " ".join(floors[k][1:]),
                       "measured": "wall time", **summary(v)} for k, v in floor_times.items() if v]
        for r in floor_rows:
            print(f"floor: {r['name']:25} median {r['median_s']:6.3f}s  min {r['min_s']:6.3f}s")
        report = {
            "benchmark": "bench/bench_launch.py",
            "argv": sys.argv[1:],
            "src": str(src or ROOT / "src"),
            "cpus": os.cpu_count(),
            "loadavg_at_end": list(os.getloadavg()),
            "note": "shared machine: other processes were running; compare medians and the floor-paired difference",
            "budget_s": args.budget_s,
            "env_toml": ENV_TOML.strip(),
            "results": results,
            "floors": floor_rows,
        }
        out = ROOT / "bench" / "results" / (f"launch-{args.label}.json" if args.label else "launch.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"budget: median <= {args.budget_s:.2f}s; {args.runs} runs each, {os.cpu_count()} cpus, "
              f"load {os.getloadavg()[0]:.2f}; wrote {out}")
        return 1 if failed else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
