"""Ray stages (`launch = "ray"`): the exact sbatch script in --dry-run, offline."""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
from pathlib import Path

from tests.nemotron_cli import NEMOTRON


def _dry_run(tmp_path: Path, *args: str, profile: str) -> subprocess.CompletedProcess[str]:
    env_toml = tmp_path / "env.toml"
    env_toml.write_text(textwrap.dedent("""
        [gpu]
        executor = "slurm"
        account = "acct"
        partition = "gpu"
        nodes = 4
        gpus_per_node = 8
        cpus_per_task = 64
        mounts = ["/lustre:/lustre"]
        startup_commands = ["echo node $(hostname) ready"]
        ray_port_base = 41000
        ray_timeout = 900
        env_vars = { WANDB_API_KEY = "wandb-secret-0123456789" }

        [bare]
        extends = "gpu"
        container_image = ""
        nodes = 2
        gpus_per_node = 0
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), COLUMNS="250", TMPDIR=str(tmp_path))
    return subprocess.run([str(NEMOTRON), *args, "--dry-run", "--batch", profile,
                           "--env-file", str(env_toml)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def _script(out: str) -> str:
    return out[out.index("#!/bin/bash"):]


def test_rl_dry_run_shows_our_ray_template_with_container(tmp_path):
    proc = _dry_run(tmp_path, "nano3", "rl", "-c", "tiny", profile="gpu")
    assert proc.returncode == 0, proc.stderr
    script = _script(proc.stdout)
    assert "nemo_runspec/templates/ray_slurm.sub.j2" in script
    assert "#SBATCH --nodes=4" in script and "#SBATCH --gpus-per-node=8" in script
    assert "#SBATCH --cpus-per-task=64" in script and "#SBATCH --ntasks-per-node=1" in script
    assert "--container-image=nvcr.io/nvidia/nemo-rl" in script  # the recipe's image
    assert "/lustre:/lustre" in script
    assert "--mpi=pmix" not in script and "jq " not in script
    assert "export NEMOTRON_RAY_PORT_BASE=41000" in script
    assert "export NEMOTRON_RAY_TIMEOUT=900" in script
    assert "echo node $(hostname) ready" in script  # per-node pre-start file
    assert "wandb-secret-0123456789" not in proc.stdout + proc.stderr
    assert not (tmp_path / "home").exists()  # offline and without side effects


def test_data_prep_dry_run_bare_metal_maps_nemo_run_dir(tmp_path):
    proc = _dry_run(tmp_path, "nano3", "data", "prep", "sft", "-c", "tiny", profile="bare")
    assert proc.returncode == 0, proc.stderr
    script = _script(proc.stdout)
    assert "--container-image" not in script and 'CONTAINER_FLAGS=""' in script
    assert "/nemo_run" not in script.split("EOF_DRIVER")[1]  # the driver uses the real job dir
    assert "--config" in script and "train.yaml" in script
    assert "#SBATCH --nodes=2" in script


def test_a_ray_start_up_timeout_shows_the_raylets_log_tails(tmp_path):
    """Both ways start-up fails (a raylet died, or too few nodes within ray_timeout) print
    the tail of the raylet logs into the job's log; the job never runs `ray stop` (it
    would stop other jobs' Ray on a shared node)."""
    proc = _dry_run(tmp_path, "nano3", "rl", "-c", "tiny", profile="bare")
    assert proc.returncode == 0, proc.stderr
    script = _script(proc.stdout)
    failed = script[script.index("ray_failed() {"):]
    failed = failed[:failed.index("\n}\n")]
    assert 'tail -n 20 "$LOG_DIR"/ray-node-*.log' in failed and 'emit_outcome false 1 "$1"' in failed
    assert re.search(r'^      ray_failed "\[ray\] ERROR: the raylet on \$node exited during start-up"$', script, re.M)
    assert re.search(r'^  ray_failed "\[ray\] ERROR: only \$have of \$want Ray node\(s\) came up within', script, re.M)
    assert "ray stop" not in script.replace("Never `ray stop`", "")
