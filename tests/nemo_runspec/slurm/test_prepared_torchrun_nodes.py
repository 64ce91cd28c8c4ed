"""How a Slurm torchrun job starts on several nodes (docs/execution.md, "Launchers").

With nemo-run's c10d rendezvous the agent that hosts the rendezvous store (one per
job) may exit while the others still close the rendezvous in it, and a successful
run ends in ``[c10d] recvVector failed`` warnings and C++ stack frames. Each node's
rank is known (``SLURM_NODEID``), so a multi-node job uses torchrun's static
rendezvous, whose agents leave nothing in the store after their exit barrier: each
node's torchrun is started by ``bash -c`` so that it reads its own ``SLURM_NODEID``
(the batch shell's would be node 0's for every node). Rendered offline and then run
by a real bash with a stand-in ``torchrun`` that prints what it was given.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path
from types import SimpleNamespace as NS

import nemo_run as run  # noqa: F401 - a required dependency: a broken install fails, never skips
import pytest

from nemo_runspec.slurm import prepare_job, render_sbatch
from nemo_runspec.slurm.prepared import rendezvous_id
from nemo_runspec.spec.models import Launch, Runspec, RunspecResources, RunspecRun

ARGS = ["--n", "x y", "$(touch INJECTED)", "it's"]


def _spec(launch: Launch, nodes: int) -> Runspec:
    return Runspec(name="demo/nodes", script_path=Path("main.py"), run=RunspecRun(launch=launch),
                   resources=RunspecResources(nodes=nodes, gpus_per_node=0))


def _render(tmp_path: Path, *, launch: str = "torchrun", nodes: int = 2, **prof) -> tuple[object, str]:
    profile = {"executor": "slurm", "account": "acct", "partition": "p", "container_image": "",
               "gpus_per_node": 0, "nodes": nodes} | prof
    job = prepare_job(env=profile, mode="batch", runspec=_spec(launch, nodes), packager=run.Packager(),
                      script="main.py", args=ARGS, base_dir=tmp_path / "base", exp_id="demo-nodes_fixed")
    return job, render_sbatch(job)


def _srun(text: str) -> str:
    [line] = [ln for ln in text.splitlines() if ln.startswith("srun --output")]
    return line


def _task(srun: str) -> str:
    """What srun runs: the words after srun's own options."""
    return srun.split(" --kill-on-bad-exit=1 ", 1)[1]


def test_two_nodes_start_torchrun_per_node_with_a_static_rendezvous(tmp_path):
    job, text = _render(tmp_path)
    task = _task(_srun(text))
    # the id comes from what the job is (its name, script, arguments, train.yaml), not the experiment id
    rdzv = rendezvous_id(NS(name=job.name, script="main.py", args=ARGS, files=job.files))
    inner = (f'exec torchrun --rdzv-backend static --rdzv-endpoint "$NEMOTRON_HEAD_NODE_IP:29500" --rdzv-id {rdzv} '
             '--nnodes 2 --nproc-per-node 1 --node-rank "$SLURM_NODEID" --tee 3 "$@"')
    assert task == "bash -c " + shlex.quote(inner) + " torchrun main.py --n 'x y' '$(touch INJECTED)' '" + \
        "it'\"'\"'s'"
    assert 'export NEMOTRON_HEAD_NODE_IP="$head_node_ip"' in text
    assert "#SBATCH --nodes=2" in text and "#SBATCH --ntasks-per-node=1" in text  # one torchrun per node
    assert text == render_sbatch(job)  # the dry run is what is submitted


@pytest.mark.parametrize("node", ["0", "1"])
def test_each_node_gives_torchrun_its_own_rank_and_the_arguments_as_they_were(tmp_path, node):
    """The task line as the batch shell would run it (its variables set as nemo-run's
    template sets them), with a stand-in torchrun: every argument arrives whole, none runs."""
    _, text = _render(tmp_path)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "torchrun").write_text('#!/bin/bash\nprintf "%s\\n" "$@"\n')
    (fake / "torchrun").chmod(0o755)
    script = f'head_node_ip=10.0.0.7\nexport NEMOTRON_HEAD_NODE_IP="$head_node_ip"\n{_task(_srun(text))}\n'
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "SLURM_NODEID": node}
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    argv = proc.stdout.splitlines()
    assert argv[:4] == ["--rdzv-backend", "static", "--rdzv-endpoint", "10.0.0.7:29500"]
    assert argv[argv.index("--node-rank") + 1] == node
    assert argv[argv.index("--tee"):] == ["--tee", "3", "main.py", *ARGS]
    assert not (tmp_path / "INJECTED").exists()


def test_one_node_keeps_nemo_runs_torchrun(tmp_path):
    _, text = _render(tmp_path, nodes=1)
    task = _task(_srun(text))
    assert task.startswith("torchrun --rdzv-backend c10d --rdzv-endpoint localhost:0 ")
    assert "NEMOTRON_HEAD_NODE_IP" not in text


def test_a_direct_jobs_arguments_reach_the_script_whole_and_never_run(tmp_path):
    """nemo-run joins a direct task's words unquoted; each argument is quoted for it."""
    _, text = _render(tmp_path, launch="direct", nodes=1)
    task = _task(_srun(text))
    assert re.fullmatch(r"python main\.py --n 'x y' '\$\(touch INJECTED\)' 'it'\"'\"'s'", task), task
