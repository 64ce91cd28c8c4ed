"""nemo_runspec._nemo_run: nemo-run's submodules without its package __init__s.

Each check runs in a fresh interpreter: the point is what gets imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import nemo_run  # noqa: E402,F401 - a required dependency: a broken install fails, never skips


def _python(code: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_lean_imports_the_slurm_parts_and_nothing_heavy():
    got = _python("""
        import json, sys
        from nemo_runspec._nemo_run import is_complete, lean
        lean()
        from nemo_run.core.execution.slurm import SlurmExecutor
        from nemo_run.run.torchx_backend.components import torchrun
        from nemo_run.run.ray.slurm import SlurmRayRequest
        from nemo_run.core.tunnel.client import LocalTunnel, SSHTunnel
        from nemo_run.config import Script
        import nemo_run
        print(json.dumps({"complete": is_complete(), "modules": sorted(sys.modules),
                          "has_experiment": "Experiment" in vars(nemo_run)}))
    """)
    assert got["complete"] is False and got["has_experiment"] is False
    heavy = [m for m in got["modules"] if m.split(".")[0] in ("torch", "leptonai", "fastapi", "httpx")
             or m.startswith(("nemo_run.run.experiment", "nemo_run.core.execution.lepton",
                              "nemo_run.core.execution.docker", "nemo_run.core.serialization.yaml",
                              "nemo_run.cli"))]
    assert heavy == []


def test_asking_for_more_imports_all_of_nemo_run_with_the_same_classes():
    got = _python("""
        import json
        from nemo_runspec._nemo_run import is_complete, lean
        lean()
        from nemo_run.core.execution.slurm import SlurmExecutor
        from nemo_run.core.execution.launcher import Torchrun
        import nemo_run
        experiment = nemo_run.Experiment                 # runs the real __init__
        from nemo_run import Script, Torchrun as T       # from-import of a name
        from nemo_run.core.execution import LocalExecutor, SlurmExecutor as S2
        print(json.dumps({
            "complete": is_complete() and is_complete("nemo_run.core.execution"),
            "same": nemo_run.SlurmExecutor is SlurmExecutor and S2 is SlurmExecutor and T is Torchrun,
            "version": nemo_run.__version__, "experiment": experiment.__name__,
            "getattr_hook_gone": "__getattr__" not in vars(nemo_run),
            "missing": hasattr(nemo_run, "no_such_name"),
        }))
    """)
    assert got == {"complete": True, "same": True, "version": got["version"], "experiment": "Experiment",
                   "getattr_hook_gone": True, "missing": False}
    assert got["version"].startswith("0.11.1")


def test_lean_after_a_full_import_changes_nothing():
    got = _python("""
        import json, sys
        import nemo_run
        before = sys.modules["nemo_run"]
        from nemo_runspec._nemo_run import is_complete, lean
        lean()
        print(json.dumps({"same": sys.modules["nemo_run"] is before, "complete": is_complete()}))
    """)
    assert got == {"same": True, "complete": True}
