"""Issue 30, class 3, on the local cluster: one rule for ``$``, the same job environment
on Slurm as in a local run, for the issue's examples and the other forms of the rule."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import cli_env

pytestmark = [pytest.mark.slurm]

NEMOTRON = Path(sys.executable).with_name("nemotron")
SCRIPT = '''\
# /// script
# [tool.runspec]
# name = "e2e/dollar"
# [tool.runspec.run]
# launch = "direct"
# [tool.runspec.env]
# FROM_SPEC = "${oc.env:I30_SUBMITTER}+$$"
# ///
import json, os
names = ["X", "Y", "Z", "W", "D", "E", "Q", "FROM_SPEC"]
print("ENV " + json.dumps({n: os.environ.get(n) for n in names}), flush=True)
'''
ENV_VARS = ('env_vars = { X = "${HOME}/x", Y = "x$$y", Z = "${oc.env:I30_SUBMITTER}", W = "$I30_NODE_VAR/w", '
            'D = "${I30_UNSET_VAR:-dflt}", E = "a b \\"c\\" \'d\' ;e", Q = "${oc.env:I30_WITH_DOLLAR}" }\n')


def _run(tmp_path: Path, cluster, profile: str) -> dict:
    (tmp_path / "proj" / "config").mkdir(parents=True, exist_ok=True)
    (tmp_path / "proj" / "config" / "default.yaml").write_text("x: 1\n")
    script = tmp_path / "proj" / "dollar.py"
    script.write_text(SCRIPT)
    env = cli_env(tmp_path, cluster, ENV_VARS + f'\n[loc]\nexecutor = "local"\n{ENV_VARS}',
                  I30_SUBMITTER="on-the-submitter", I30_WITH_DOLLAR="p$ss $HOME", I30_NODE_VAR="node-side",
                  HOME=str(tmp_path))
    proc = subprocess.run([str(NEMOTRON), "run", str(script), "--run", profile], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("ENV "))
    return json.loads(line[4:])


def test_the_job_sees_the_same_values_on_slurm_and_here(tmp_path, slurm_cluster):
    here = _run(tmp_path / "local", slurm_cluster, "loc")
    there = _run(tmp_path / "slurm", slurm_cluster, "cluster")
    assert here["X"] == str(tmp_path / "local") + "/x" and there["X"] == str(tmp_path / "slurm") + "/x"
    for name in ("Y", "Z", "W", "D", "E", "Q", "FROM_SPEC"):
        assert here[name] == there[name], name
    assert here["Y"] == "x$y"
    assert here["Z"] == "on-the-submitter"           # resolved on the submitting machine
    assert here["W"] == "node-side/w"                # the job's environment (sbatch passes ours on)
    assert here["D"] == "dflt"
    assert here["E"] == "a b \"c\" 'd' ;e"
    assert here["Q"] == "p$ss $HOME"                 # an environment value is data
    assert here["FROM_SPEC"] == "on-the-submitter+$"
    assert os.environ.get("I30_SUBMITTER") is None
