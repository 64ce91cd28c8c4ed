"""Ray clusters on the local 2-node Slurm cluster, through our template and nemo-run."""

from __future__ import annotations

import io
import re
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slurm]

import nemo_run as run  # noqa: E402 - a required dependency: a broken install fails, never skips

from nemo_runspec.runtime.outcome import find  # noqa: E402
from nemo_runspec.slurm import prepare_job, render_sbatch, submit  # noqa: E402

from .helpers import runspec  # noqa: E402

DRIVER = textwrap.dedent("""
    import os, socket, sys
    import ray

    ray.init()  # RAY_ADDRESS is exported by the template
    alive = [n for n in ray.nodes() if n["Alive"]]
    print("RAY_NODES", len(alive), flush=True)

    @ray.remote(num_cpus=1)
    def where():
        return os.environ.get("SLURMD_NODENAME", socket.gethostname())

    # a task per CPU so both raylets get work
    seen = sorted(set(ray.get([where.remote() for _ in range(8)])))
    print("TASK_NODES", ",".join(seen), flush=True)
    sys.exit(int(os.environ.get("DRIVER_EXIT", "0")))
""")


def _spec(nodes=2):
    return runspec(name="e2e/ray", image=None, launch="ray", nodes=nodes, gpus_per_node=0)


def _profile(**over):
    return {"executor": "slurm", "account": "testacct", "partition": "debug",
            "container_image": "", "gpus_per_node": 0, "time": "00:10:00",
            "nodes": 2, "cpus_per_task": 1, "ray_timeout": 240} | over


def _job(tmp_path: Path, prof=None, exp_id=None, env_vars=None):
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    return prepare_job(env=prof or _profile(), mode="batch", runspec=_spec(), packager=run.Packager(),
                       script=str(script), base_dir=tmp_path / "jobs", exp_id=exp_id,
                       env_vars=env_vars or {})


def test_ray_job_spans_both_nodes_runs_prestart_once_per_node(tmp_path, slurm_cluster):
    marker = tmp_path / "prestart.txt"
    prof = _profile(startup_commands=[f"echo $SLURMD_NODENAME >> {marker}"])
    job = _job(tmp_path, prof, exp_id="e2e-ray_twonodes")
    rendered = render_sbatch(job)
    assert "--container-image" not in rendered and "--mpi=pmix" not in rendered
    out = io.StringIO()
    sub = submit(job, attached=True, out=out, poll=1.0)
    log = Path(sub.log_path).read_text()
    assert sub.exit_code == 0, log
    assert "RAY_NODES 2" in log
    # ports stay below the ephemeral range, where outgoing connections could hold them
    gcs_port = int(re.search(r"head \S+ at [^:]+:(\d+)", log).group(1))
    ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    assert 20000 <= gcs_port and gcs_port + 999 < ephemeral_low
    assert "[ray] cluster ready" in out.getvalue()
    assert sorted(marker.read_text().split()) == ["n1", "n2"]  # once on each node
    # what ran is byte-identical to what the dry run showed
    assert Path(sub.sbatch_path).read_text() == rendered
    assert Path(job.ray_log_dir).is_dir()


def test_driver_exit_code_becomes_job_exit_code(tmp_path, slurm_cluster):
    job = _job(tmp_path, _profile(nodes=1), env_vars={"DRIVER_EXIT": "7"})
    sub = submit(job, attached=True, out=io.StringIO(), poll=1.0)
    log = Path(sub.log_path).read_text()
    assert sub.exit_code == 7, log
    assert sub.state == "FAILED"
    assert "driver exited with code 7" in log


def test_raylet_that_cannot_start_fails_fast_with_message(tmp_path, slurm_cluster):
    # a pre-start command that fails kills the raylet start on that node
    job = _job(tmp_path, _profile(nodes=1, startup_commands=["exit 5"], ray_timeout=60))
    sub = submit(job, attached=True, out=io.StringIO(), poll=1.0)
    assert sub.exit_code != 0
    log = Path(sub.log_path).read_text()
    assert "exited during start-up" in log
    # the template's own failure ends the log with its outcome line (nemo_runspec.runtime.outcome)
    said = find(log)
    assert said is not None and not said.ok and said.exit_code == 1
    assert said.message.startswith("[ray] ERROR: the raylet on ") and said.message.endswith(" exited during start-up")


KILLER = textwrap.dedent("""
    import subprocess, sys, time
    import ray

    ray.init()
    print("RAY_NODES", len([n for n in ray.nodes() if n["Alive"]]), flush=True)
    # both "nodes" share this host: end this job's worker raylet start script (its path is
    # under the test's own jobs dir; other Ray jobs may run on the host meanwhile)
    subprocess.run(["pkill", "-f", sys.argv[1] + "/.*/start-node-1.sh"], check=False)
    time.sleep(600)  # the watchdog must stop us long before this
""")


def test_raylet_dying_under_the_driver_fails_the_job_fast(tmp_path, slurm_cluster):
    script = tmp_path / "driver.py"
    script.write_text(KILLER)
    job = prepare_job(env=_profile(), mode="batch", runspec=_spec(), packager=run.Packager(),
                      script=str(script), args=[str(tmp_path / "jobs")], base_dir=tmp_path / "jobs")
    import time

    t0 = time.monotonic()
    sub = submit(job, attached=True, out=io.StringIO(), poll=1.0)
    assert sub.exit_code == 1
    assert time.monotonic() - t0 < 240
    log = Path(sub.log_path).read_text()
    assert "died while the driver was running" in log
    said = find(log)
    assert said is not None and not said.ok and "died while the driver was running; the driver was stopped" in said.message
