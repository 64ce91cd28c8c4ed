"""A runspec's ``setup`` and ``run.cmd`` on the local 2-node Slurm cluster: torchrun
over both nodes (setup once per node, exports reaching every worker), a failing
setup failing the job before the recipe, and a Ray job whose raylets and driver
both see the setup. Hostile script arguments stay data."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest

from .helpers import profile

pytestmark = [pytest.mark.slurm]

import nemo_run as run  # noqa: E402 - a required dependency: never skipped

from nemo_runspec import parse  # noqa: E402
from nemo_runspec.slurm import prepare_job, submit  # noqa: E402


@pytest.fixture(autouse=True)
def _cluster(slurm_cluster):
    return slurm_cluster


def _script(tmp_path: Path, launch: str, setup: str, cmd: str, body: str) -> Path:
    lines = ["[tool.runspec]", 'name = "e2e/setup"', "",
             "[tool.runspec.run]", f'launch = "{launch}"', f'cmd = "{cmd}"', f'setup = """\n{setup}\n"""']
    block = "\n".join(f"# {ln}" if ln else "#" for arg in lines for ln in arg.split("\n"))
    path = tmp_path / "job.py"
    path.write_text(f"# /// script\n{block}\n# ///\n" + textwrap.dedent(body))
    return path


def _submit(tmp_path, path, args=(), **over):
    job = prepare_job(env=profile(**over), mode="run", runspec=parse(path), packager=run.Packager(),
                      script=str(path), args=list(args), base_dir=tmp_path / "jobs")
    out = io.StringIO()
    sub = submit(job, attached=True, out=out, poll=0.5)
    return sub, Path(sub.log_path).read_text()  # (the same lines were streamed to out)


@pytest.mark.cluster_alone  # two-node torchrun rendezvous on port 29500 of the head host; here every node is one host
def test_torchrun_setup_once_per_node_exports_reach_every_worker(tmp_path):
    marks = tmp_path / "setup-ran"
    path = _script(tmp_path, "torchrun",
                   f'echo "$SLURMD_NODENAME" >> {marks}\nexport FROM_SETUP="node-$SLURMD_NODENAME"',
                   "python {script} --config {config} {args}",
                   """
                   import os, sys
                   print("WORKER", os.environ["RANK"], os.environ["FROM_SETUP"], sys.argv[3:], flush=True)
                   """)
    pwned = tmp_path / "PWNED"
    sub, log = _submit(tmp_path, path, args=["two words", f"$(touch {pwned})"], nodes=2)
    assert sub.exit_code == 0, log[-3000:]
    workers = sorted(ln.split("WORKER ", 1)[1] for ln in log.splitlines() if "WORKER " in ln)
    assert len(workers) == 2, log[-3000:]
    assert {w.split()[0] for w in workers} == {"0", "1"}
    assert {w.split()[1] for w in workers} == {"node-n1", "node-n2"}  # each node's own setup
    assert all(w.endswith(f"['two words', '$(touch {pwned})']") for w in workers)
    assert sorted(marks.read_text().split()) == ["n1", "n2"]  # once per node
    assert not pwned.exists()


def test_failing_setup_fails_the_job_before_the_recipe(tmp_path):
    path = _script(tmp_path, "direct", "true\nexit 7", "python {script}",
                   'print("RECIPE STARTED")\n')
    sub, log = _submit(tmp_path, path)
    assert sub.exit_code == 7 and sub.state == "FAILED"
    assert "RECIPE STARTED" not in log


def test_ray_raylets_and_driver_see_the_setup(tmp_path):
    path = _script(tmp_path, "ray", "export FROM_SETUP=ray-setup",
                   "python {script} --config {config}",
                   """
                   import os
                   import ray

                   ray.init(address=os.environ["RAY_ADDRESS"], logging_level="ERROR")

                   @ray.remote(num_cpus=1)
                   def probe():
                       return os.environ.get("FROM_SETUP")

                   print("DRIVER", os.environ.get("FROM_SETUP"), flush=True)
                   print("TASKS", sorted(set(ray.get([probe.remote() for _ in range(4)]))), flush=True)
                   """)
    sub, log = _submit(tmp_path, path, nodes=2, ray_timeout=240)
    assert sub.exit_code == 0, log[-4000:]
    assert "DRIVER ray-setup" in log
    assert "TASKS ['ray-setup']" in log
