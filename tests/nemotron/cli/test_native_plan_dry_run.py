"""The dry run of a training stage shows what the native entry calls in the job's image:
for every image of the compatibility table, the recipe function that image's
Megatron-Bridge has (read from its source: tests/nemotron/training/data), or the
NeMo-RL flow of its release."""

from __future__ import annotations

import os
import re
import subprocess
import textwrap

import pytest

from nemotron.training.versions import TABLE
from tests.nemotron.training.manifests import MB_OF_VERSION, mb_manifest
from tests.nemotron_cli import NEMOTRON


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    root = tmp_path_factory.mktemp("plan")
    (root / "env.toml").write_text(textwrap.dedent("""
        [P]
        executor = "slurm"
        account = "acct"
        partition = "batch"
        remote_job_dir = "/tmp/nemotron-jobs"
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(root / "home"), COLUMNS="250", NEMORUN_HOME=str(root / "nemorun"))
    return root, env


def _dry_run(sandbox, *args: str) -> str:
    root, env = sandbox
    r = subprocess.run([str(NEMOTRON), "--env-file", str(root / "env.toml"), *args, "--run", "P", "--dry-run"],
                       cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout[r.stdout.index("Native backend"):]


def _sft_rows():
    return [row for row in TABLE if "sft" in row.stages]


@pytest.mark.parametrize("row", _sft_rows(), ids=lambda r: r.image.rpartition(":")[2])
def test_sft_dry_run_shows_the_recipe_function_the_image_has(sandbox, row):
    out = _dry_run(sandbox, "nano3", "sft", "-c", "default", f"run.env.container_image={row.image}")
    shown = re.search(r"recipe function\s+(\S+?)\((.*)\)", out)
    assert shown, out
    manifest = mb_manifest(MB_OF_VERSION[row.versions["megatron-bridge"]])
    desc = manifest["names"].get(shown.group(1))
    assert desc is not None, f"{row.image}: shows {shown.group(1)}, which its megatron-bridge lacks"
    assert (shown.group(2) != "") == bool(desc.get("varkw"))  # arguments only to a function that takes them
    assert f"megatron-bridge {row.versions['megatron-bridge']}" in out


def test_the_default_image_is_the_reference_one_and_its_function_is_finetune_config(sandbox):
    out = _dry_run(sandbox, "nano3", "sft", "-c", "default")
    assert "nvcr.io/nvidia/nemo:25.11.nemotron_3_nano  (inferred" in out
    assert "nemotron_3_nano.nemotron_3_nano_finetune_config(peft=None, packed_sequence=True)" in out


def test_an_explicit_recipe_the_image_lacks_is_named_in_the_dry_run(sandbox):
    out = _dry_run(sandbox, "nano3", "sft", "-c", "default",
                   "recipe._target_=megatron.bridge.recipes.nemotronh.nemotron_3_nano.nemotron_3_nano_sft_config")
    assert "error when the job starts: recipe._target_ names nemotron_3_nano_sft_config" in out


def test_unknown_and_unsupported_images_say_what_the_job_will_do(sandbox):
    assert "not in the compatibility table" in _dry_run(sandbox, "nano3", "pretrain", "-c", "default",
                                                        "run.env.container_image=my/image:1")
    out = _dry_run(sandbox, "nano3", "pretrain", "-c", "default", "run.env.container_image=nvcr.io/nvidia/nemo:25.11")
    assert "no Nemotron 3 Nano recipe" in out and "stops when it starts (exit 2)" in out


@pytest.mark.parametrize("image,flow", [("nvcr.io/nvidia/nemo-rl:v0.4.0.nemotron_3_nano", "run_grpo_math.py"),
                                        ("nvcr.io/nvidia/nemo-rl:v0.7.0", "run_grpo.py")])
def test_rl_dry_run_shows_the_release_flow(sandbox, image, flow):
    # (two nodes: the only cell of the RL scale matrix, NeMo-RL's own 2n8g recipe)
    out = _dry_run(sandbox, "nano3", "rl", "-c", "default", f"run.env.container_image={image}", "run.env.nodes=2")
    assert f"NeMo-RL's examples/{flow}" in out
    assert ("13 values" in out) == image.endswith("v0.7.0")
