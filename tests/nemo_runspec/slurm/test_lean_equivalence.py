"""The lean nemo-run path renders and submits exactly what all of nemo-run does.

``nemo_runspec.slurm`` imports only the parts of nemo-run that build a Slurm
job (``nemo_runspec._nemo_run``) and replays ``Experiment``'s steps
for one task (``nemo_runspec.slurm.launch``). Every kind of job is rendered
(and a few submitted, against a fake ``sbatch``) both ways, each in its own
process, and the bytes compared: a nemo-run upgrade that breaks the
equivalence fails here. The lean process must not import torch, Lepton, the
other executors or nemo-run's Experiment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import nemo_run  # noqa: E402,F401 - a required dependency: a broken install fails, never skips
import pytest

pytestmark = pytest.mark.slow  # each case runs in fresh processes, one importing all of nemo-run
sys.path.insert(0, str(Path(__file__).parent))
from lean_cases import CASES, SECRET, SUBMIT_CASES  # noqa: E402

HELPER = Path(__file__).with_name("lean_cases.py")

#: Modules the lean path must never import (prefixes).
HEAVY = ("torch", "leptonai", "fastapi", "httpx", "kubernetes", "sky", "docker",
         "nemo_run.run.experiment", "nemo_run.run.job", "nemo_run.cli",
         "nemo_run.core.serialization.yaml", "nemo_run.core.execution.lepton",
         "nemo_run.core.execution.docker", "nemo_run.core.execution.dgxcloud",
         "nemo_run.core.execution.kubeflow", "nemo_run.core.execution.skypilot",
         "nemo_run.run.torchx_backend.packaging", "nemo_run.run.torchx_backend.schedulers")

#: Files nemo-run's Experiment writes that only its own Experiment.from_id reads;
#: the lean path leaves them out (nemo_runspec/slurm/launch.py says so).
EXPERIMENT_METADATA = {"_CONFIG", "_VERSION", "_TASKS", "_TUNNELS", "_DONE", "__main__.py"}


def _run(way: str, action: str, case: str, base: Path, env: dict[str, str]) -> dict:
    proc = subprocess.run([sys.executable, str(HELPER), way, action, case, str(base)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, f"{way} {action} {case} failed:\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _env(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text('#!/bin/sh\necho "$@" >> "$FAKE_SBATCH_LOG"\necho 4242\n')
    sbatch.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEMOTRON_", "NEMORUN_"))}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), NEMORUN_HOME=str(tmp_path / "nemorun"),
               PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
               FAKE_SBATCH_LOG=str(tmp_path / "sbatch.log"), TMPDIR=str(tmp_path))
    return env


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    return _env(tmp_path)


def _heavy(modules: list[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, dict]:
    """Every case rendered by one lean and one full process (same base dir)."""
    tmp = tmp_path_factory.mktemp("render")
    env = _env(tmp)
    base = tmp / "work" / "base"
    base.parent.mkdir()
    return {way: _run(way, "render", "all", base, env) for way in ("full", "lean")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_render_is_byte_identical_to_nemo_run_experiment_dryrun(case, rendered):
    full, lean = rendered["full"]["scripts"][case], rendered["lean"]["scripts"][case]
    assert "#!/bin/bash" in full and "#SBATCH" in full
    assert lean == full
    assert SECRET not in lean


def test_the_lean_render_imports_no_heavy_module(rendered):
    assert "nemo_run.run.experiment" in rendered["full"]["modules"]  # the reference is all of nemo-run
    assert _heavy(rendered["lean"]["modules"]) == []
    assert "nemo_run.core.execution.slurm" in rendered["lean"]["modules"]


@pytest.mark.parametrize("case", SUBMIT_CASES)
def test_submission_matches_nemo_run_experiment_run(case, tmp_path, env):
    """Against a fake sbatch: the same script, the same sbatch command line, the
    same job dir files (minus nemo-run's own experiment metadata)."""
    base = tmp_path / "work" / "base"
    base.parent.mkdir()
    log = Path(env["FAKE_SBATCH_LOG"])
    rendered = _run("lean", "render", case, base, env)["scripts"][case]  # writes nothing under base
    full = _run("full", "submit", case, base, env)
    os.rename(base, tmp_path / "full-base")  # the lean run gets the very same paths
    log.unlink()
    lean = _run("lean", "submit", case, base, env)

    assert lean["job_id"] == full["job_id"] == "4242"
    assert lean["sbatch_argv"] == full["sbatch_argv"]
    exp_dir = base / "experiments" / f"lean-{case}" / f"lean-{case}_lean"
    dependency = ["--dependency=afterany:4141"] if "dependency" in case else []
    assert lean["sbatch_argv"] == [" ".join(["--requeue", "--parsable", *dependency,
                                             f"{exp_dir}/lean-{case}_sbatch.sh"])]
    assert lean["script"] == full["script"] == rendered  # the dry run shows what is submitted
    metadata = {f for f in full["files"] if Path(f).name in EXPERIMENT_METADATA
                or f.startswith(f"lean-{case}/configs/")}
    assert metadata, "nemo-run's Experiment wrote no metadata: is the reference still the reference?"
    assert lean["files"] == sorted(set(full["files"]) - metadata)
    assert f"lean-{case}/code/main.py" in lean["files"]  # packaged and extracted by nemo-run
    assert _heavy(lean["modules"]) == []


# The nemo-run functions nemo_runspec/slurm/launch.py replays, pinned by the hash of
# their source. Changed by a nemo-run upgrade: re-read the new source, update the
# replay to match, extend the cases above if needed, then update the hash.
REPLAYED = {
    "nemo_run.run.experiment:Experiment.__init__": "17a76f7013bacfb4",
    "nemo_run.run.experiment:Experiment._add_single_job": "cdd8d8e9b48ec564",
    "nemo_run.run.experiment:Experiment._prepare": "1d4349b7c47e81c1",
    "nemo_run.run.experiment:Experiment.dryrun": "ba9021d42ef511d3",
    "nemo_run.run.experiment:Experiment.run": "1180be128c3f7565",
    "nemo_run.run.experiment:Experiment._run_dag": "11f62ea4b2ef9ccc",
    "nemo_run.run.job:Job.prepare": "7f29f44a8b0c4167",
    "nemo_run.run.job:Job.launch": "12c52a1dcb49aba3",
    "nemo_run.run.torchx_backend.packaging:package": "81089e3fd9e49996",
    "nemo_run.run.torchx_backend.launcher:launch": "c7bda49350d76dae",
    "nemo_run.run.torchx_backend.runner:Runner.dryrun": "ecbd70ead5d0e03c",
    "nemo_run.run.torchx_backend.runner:Runner.schedule": "fdabb7a8ba61a5de",
    "nemo_run.run.torchx_backend.runner:Runner.run": "dceca77135c7e7b0",
    "nemo_run.run.torchx_backend.schedulers.api:SchedulerMixin.submit_dryrun": "87151acbb69e7a31",
    "nemo_run.run.torchx_backend.schedulers.slurm:SlurmTunnelScheduler._submit_dryrun": "ede90c68c07cfdbe",
    "nemo_run.run.torchx_backend.schedulers.slurm:SlurmTunnelScheduler.schedule": "ad7168cce9608cc1",
    # replayed by nemo_runspec/slurm/package_step.py (paths quoted); rsync is called with a quoted source
    "nemo_run.core.execution.slurm:SlurmExecutor.package": "e4bacec15f6d8e91",
    "nemo_run.core.tunnel.rsync:rsync": "bd5acd9968b0b574",
}


def test_replayed_nemo_run_functions_are_unchanged():
    code = textwrap.dedent("""
        import hashlib, importlib, inspect, json, sys
        out = {}
        for ref in json.loads(sys.argv[1]):
            mod, _, qual = ref.partition(":")
            obj = importlib.import_module(mod)
            for part in qual.split("."):
                obj = getattr(obj, part)
            out[ref] = hashlib.sha256(inspect.getsource(obj).encode()).hexdigest()[:16]
        print(json.dumps(out))
    """)
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(sorted(REPLAYED))],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    changed = {ref: h for ref, h in got.items() if REPLAYED[ref] != h}
    assert not changed, (
        "nemo-run changed functions that nemo_runspec/slurm/launch.py replays; re-check the "
        f"replay against them, then update REPLAYED: {json.dumps(changed, indent=1)}"
    )
