"""Promises the docs make about the dry run and a profile's image, checked on the real CLI.

- A torchrun job's dry run is the same from run to run except for the experiment id a
  submission draws (``<name>_<time in ns>``, in paths only): ``--rdzv-id`` is derived
  from the job itself (it was derived from the experiment id, so every dry run showed
  another one than the job submitted after it would get); another config, another id.
- What a Slurm job runs in is said where it is chosen: ``env show`` and the dry-run
  header name the recipe's image when the profile sets no ``container_image``, the
  profile's image when it does, and bare metal for ``container_image = ""``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

NEMOTRON = Path(sys.executable).with_name("nemotron")
RECIPE_IMAGE = "nvcr.io/nvidia/nemo:25.11.nemotron_3_nano"  # stage0_pretrain/train.py's runspec image


@pytest.fixture()
def sandbox(tmp_path: Path) -> dict:
    env_toml = tmp_path / "env.toml"
    env_toml.write_text(textwrap.dedent("""
        [recipe-image]
        executor = "slurm"
        account = "acct"
        partition = "batch"
        gpus_per_node = 0

        [bare]
        extends = "recipe-image"
        container_image = ""

        [own-image]
        extends = "recipe-image"
        container_image = "registry.example/team/train:7"
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), NEMOTRON_ENV_FILE=str(env_toml), COLUMNS="250",
               NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "reg"))
    return {"env": env, "tmp": tmp_path, "env_toml": env_toml}


def run(sb: dict, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), *args], cwd=sb["tmp"], env=sb["env"], capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def script_of(output: str) -> str:
    return output[output.index("sbatch script (exact script that would be submitted)"):]


def test_two_dry_runs_of_a_torchrun_job_differ_only_in_the_experiment_id(sandbox):
    first, second = (run(sandbox, "nano3", "pretrain", "-c", "tiny", "--batch", "bare", "--dry-run")
                     for _ in range(2))
    assert first.returncode == second.returncode == 0, first.stderr
    a, b = script_of(first.stdout), script_of(second.stdout)
    ids = [re.search(r"nano3-pretrain_(\d+)", text).group(1) for text in (a, b)]
    assert ids[0] != ids[1]  # two commands, two experiments
    assert a.replace(ids[0], "<exp>") == b.replace(ids[1], "<exp>")
    rdzv = re.findall(r"--rdzv-id (\d+)", a)
    assert len(rdzv) == 1
    other = run(sandbox, "nano3", "pretrain", "-c", "tiny", "--batch", "bare", "--dry-run", "train.train_iters=7")
    assert re.findall(r"--rdzv-id (\d+)", script_of(other.stdout)) != rdzv  # another job, another rendezvous


@pytest.mark.parametrize("profile,expected", [
    ("recipe-image", f"{RECIPE_IMAGE} (the recipe's image: the profile sets no container_image"),
    ("bare", 'bare metal (container_image = "" at env.toml:'),
    ("own-image", "registry.example/team/train:7 (container_image at env.toml:"),
])
def test_the_dry_run_header_and_env_show_say_what_the_job_runs_in(sandbox, profile, expected):
    dry = run(sandbox, "nano3", "pretrain", "-c", "tiny", "--batch", profile, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    header = dry.stdout[:dry.stdout.index("run.env (execution settings)")]
    flat = " ".join(line.strip(" │") for line in header.splitlines())
    assert re.search(r"container\s+" + re.escape(expected), " ".join(flat.split())), header
    script = script_of(dry.stdout)
    if profile == "bare":
        assert "--container-image" not in script
    else:
        assert f"--container-image {expected.split()[0]}" in script
    shown = run(sandbox, "env", "show", profile)
    assert shown.returncode == 0, shown.stderr
    line = next(ln for ln in shown.stdout.splitlines() if ln.startswith("container: "))
    if profile == "recipe-image":
        assert line.startswith("container: each recipe's own image (its runspec `image`)")
    else:
        assert line.startswith("container: " + expected)
