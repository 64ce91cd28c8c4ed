"""The nano3 chain's convert stage: between SFT and RL in the default chain (a job like the others),
skipped in the CPU fallback chain where SFT and RL hand each other fallback-pt as it is."""

from __future__ import annotations

import os
import re
import subprocess
import textwrap

import pytest

from tests.nemotron_cli import NEMOTRON


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("pipe")
    (tmp / "env.toml").write_text(textwrap.dedent("""
        [dev]
        executor = "slurm"
        account = "acct"
        partition = "batch"
        remote_job_dir = "/tmp/nemotron-jobs"
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp / "nhome"), NEMOTRON_ENV_FILE=str(tmp / "env.toml"),
               NEMORUN_HOME=str(tmp / "nhome" / "nemorun"), NEMOTRON_ARTIFACTS_ROOT=str(tmp / "registry"),
               COLUMNS="250", TERM="dumb")
    return {"env": env, "cwd": tmp}


def _pipe(sb: dict, *args: str) -> str:
    proc = subprocess.run([str(NEMOTRON), "nano3", "pipe", *args, "--dry-run"], cwd=sb["cwd"], env=sb["env"],
                          text=True, capture_output=True, timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_the_default_chain_converts_between_sft_and_rl(sandbox):
    out = _pipe(sandbox, "-c", "default", "--batch", "dev", "rl.run.env.nodes=2")  # (the RL scale matrix: 2 nodes)
    graph = out[out.index("dependency graph"):].splitlines()
    names = [line.split()[0] for line in graph[1:] if line.strip()]
    assert names.index("sft") < names.index("convert") < names.index("rl")
    assert any(line.startswith("convert <- sft -> nano3-sft-model-hf  (runs") for line in graph)
    assert any(re.match(r"rl <- (.*, )?convert\b", line) for line in graph)
    stage = out[out.index("stage 5/8: convert (nano3/convert)"):out.index("stage 6/8")]
    assert "#SBATCH --dependency='afterok:<sft>'" in stage  # a Slurm job of its own, after SFT
    assert "convert.py --config" in stage and "nvcr.io/nvidia/nemo:25.11.nemotron_3_nano" in stage
    assert "megatron.bridge.AutoBridge.from_hf_pretrained(hf_model" in stage  # 0.3.0rc0's export
    assert "bridge.export_ckpt(megatron_path=..., hf_path=..." in stage


def test_a_newer_image_shows_that_releases_export(sandbox):
    out = _pipe(sandbox, "-c", "default", "--batch", "dev", "--stages", "convert",
                "convert.run.env.container_image=nvcr.io/nvidia/nemo:26.08")
    assert "megatron.bridge.AutoBridge.from_auto_config(megatron_path, hf_model" in out


def test_the_fallback_chain_skips_it(sandbox):
    out = _pipe(sandbox, "-c", "tiny")
    graph = out[out.index("dependency graph"):]
    assert ("convert <- sft  (skipped: formats already match (fallback-pt -> fallback-pt): the next stage "
            "reads the model as it is)") in graph
    assert re.search(r"^rl <- prep-rl, sft -> nano3-rl-model-tiny", graph, re.M)
    assert "convert: skipped: formats already match" in out
