"""`nemotron kit preflight` reports the training libraries inside the profile's image on every node,
on the local two-node cluster through pyxis/enroot.

The test image is a Debian rootfs with python3 and none of the libraries; the project's
venv is mounted into it at the same path (for torch and the packaged code), and its
``megatron`` namespace is masked with an empty directory, so what the job sees is what the
image carries: nothing. A second run without the mask sees the venv's megatron-bridge
wheel on both nodes.
"""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
from importlib.metadata import version
from pathlib import Path

import pytest

from .test_containers import _cli_env  # the two-node container profile [ctr], this venv mounted in

pytestmark = [pytest.mark.slurm]

NEMOTRON = Path(sys.executable).with_name("nemotron")


def _preflight(tmp_path: Path, image: str, mounts: list[str]) -> str:
    tmp_path.mkdir(parents=True, exist_ok=True)
    env = _cli_env(tmp_path, image, extra_mounts=mounts, env_vars={})
    proc = subprocess.run([str(NEMOTRON), "kit", "preflight", "--run", "ctr"], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "preflight passed: 2 rank(s) on 2 node(s)" in out
    return out


@pytest.mark.cluster_alone  # two-node torchrun rendezvous on port 29500 of the head host; here every node is one host
def test_preflight_shows_the_image_has_none_of_the_libraries_and_then_what_a_mount_adds(
        tmp_path, slurm_cluster, container_image):
    empty = tmp_path / "no-megatron"
    empty.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    out = _preflight(tmp_path / "masked", container_image, [f"{empty}:{site / 'megatron'}"])
    none = re.findall(r"^(?:\[default0\]:)?  (n\d): none of megatron-bridge, megatron-core, nemo-rl, nemo-evaluator, "
                      r"nemo-evaluator-launcher: the native backends cannot run here \(the CPU fallback can\)$", out, re.M)
    assert sorted(none) == ["n1", "n2"], out[-3000:]
    assert f"libraries (image {container_image}):" in out
    assert f"note: {container_image} is not in the compatibility table" in out

    out = _preflight(tmp_path / "venv", container_image, [])
    found = re.findall(rf"^(?:\[default0\]:)?  (n\d): megatron-bridge {re.escape(version('megatron-bridge'))}, "
                       rf"megatron-core ", out, re.M)
    assert sorted(found) == ["n1", "n2"], out[-3000:]
