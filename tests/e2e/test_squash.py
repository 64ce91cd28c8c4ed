"""Container images squashed once into the profile's squash_dir by a Slurm job,
and recipe jobs that wait for it (nemo_runspec.slurm.squash, nemotron kit squash).

No registry is reachable here: the successful imports squash a root filesystem
already on the cluster (``dir://``, through mksquashfs: the test image unpacked);
the registry path goes through ``enroot import`` for real and fails, which checks
that enroot's own message ends the chain.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.nemotron_cli import NEMOTRON

pytestmark = [pytest.mark.slurm]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rootfs(container_image, tmp_path_factory) -> Path:
    """The test image unpacked: a root filesystem to squash without a registry."""
    root = tmp_path_factory.mktemp("rootfs") / "bookworm"
    subprocess.run(["unsquashfs", "-q", "-d", str(root), container_image], check=True,
                   capture_output=True, timeout=300)
    return root


def _home(tmp_path: Path, profile: str) -> dict:
    env_toml = tmp_path / "env.toml"
    env_toml.write_text(textwrap.dedent(profile))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "nhome"), NEMOTRON_ENV_FILE=str(env_toml),
               NEMORUN_HOME=str(tmp_path / "nemorun"), COLUMNS="300", TERM="dumb")
    return env


def _nemotron(env: dict, cwd: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(NEMOTRON), *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _profile(image: str, squash_dir: Path) -> str:
    mounts = ", ".join(f'"{p}:{p}"' for p in sorted({sys.prefix, sys.base_prefix, str(REPO / "src")}))
    return f"""
        [sq]
        executor = "slurm"
        account = "testacct"
        partition = "debug"
        container_image = "{image}"
        squash_dir = "{squash_dir}"
        gpus_per_node = 0
        time = "00:10:00"
        mounts = [{mounts}]
        srun_args = ["--container-env=PATH"]
        env_vars = {{ PATH = "{Path(sys.prefix) / 'bin'}:/usr/local/bin:/usr/bin:/bin" }}
    """


def test_kit_squash_once_then_reuse_then_force(tmp_path, rootfs):
    images = tmp_path / "images"
    env = _home(tmp_path, _profile(f"dir://{rootfs}", images))
    first = _nemotron(env, tmp_path, "kit", "squash", "sq")
    assert first.returncode == 0, first.stdout + first.stderr
    sqsh = list(images.glob("*.sqsh"))
    assert len(sqsh) == 1 and sqsh[0].stat().st_size > 1_000_000
    assert "squashed in" in first.stdout
    before = sqsh[0].stat().st_mtime_ns
    again = _nemotron(env, tmp_path, "kit", "squash", "sq")
    assert again.returncode == 0 and "already squashed" in again.stdout
    forced = _nemotron(env, tmp_path, "kit", "squash", "sq", "--force-squash")
    assert forced.returncode == 0 and "squashed in" in forced.stdout
    assert sqsh[0].stat().st_mtime_ns != before
    assert not list(images.glob("*.tmp"))


def test_recipe_job_waits_for_the_squash_then_reuses_it(tmp_path, rootfs, slurm_cluster):
    images = tmp_path / "images"
    env = _home(tmp_path, _profile(f"dir://{rootfs}", images))
    dry = _nemotron(env, tmp_path, "kit", "preflight", "--batch", "sq", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "squash script" in dry.stdout and "mksquashfs" in dry.stdout
    assert not images.exists()  # a dry run imports nothing

    batch = _nemotron(env, tmp_path, "kit", "preflight", "--batch", "sq")
    assert batch.returncode == 0, batch.stdout + batch.stderr
    out = batch.stdout + batch.stderr
    squash_id = re.search(r"in Slurm job (\d+) \(log", out).group(1)
    job_id = re.search(r"Submitted Slurm job (\d+)", out).group(1)
    deps = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True).stdout
    assert f"afterok:{squash_id}" in deps or slurm_cluster.wait(squash_id, timeout=300).state == "COMPLETED"
    assert slurm_cluster.wait(job_id, timeout=300).state == "COMPLETED"
    sqsh = list(images.glob("*.sqsh"))
    assert len(sqsh) == 1

    run = _nemotron(env, tmp_path, "kit", "preflight", "--run", "sq")
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-3000:]
    assert f"{sqsh[0]} (already squashed)" in out
    assert "preflight passed" in out


def test_failed_import_fails_the_chain_with_enroots_message(tmp_path, container_image, slurm_cluster):
    images = tmp_path / "images"
    env = _home(tmp_path, _profile("registry.invalid/none/image:1", images))
    run = _nemotron(env, tmp_path, "kit", "preflight", "--run", "sq")
    out = run.stdout + run.stderr
    assert run.returncode == 1, out[-3000:]
    assert "failed" in out and "registry.invalid" in out
    assert re.search(r"Could not resolve host|resolve|curl", out), out[-2000:]  # enroot's own words
    # the import's outcome line first (nemo_runspec.runtime.outcome), enroot's own last line in it, and not the JSON
    said = re.search(r"^  error: importing registry\.invalid/none/image:1 failed: (.+)$", run.stderr, re.M)
    assert said and re.search(r"resolve|curl|ERROR", said.group(1)), run.stderr[-2000:]
    assert "nemotron-outcome:" not in run.stderr
    job_id = re.search(r"Submitted Slurm job (\d+)", out).group(1)
    assert slurm_cluster.wait(job_id, timeout=60).state == "CANCELLED"
    assert not list(images.glob("*.sqsh"))
