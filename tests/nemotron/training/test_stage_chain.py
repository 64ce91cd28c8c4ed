"""Stages hand data and models on through artifacts, locally, via the real CLI."""

from __future__ import annotations

import math
import os
import re
import subprocess
from pathlib import Path

from tests.nemotron_cli import NEMOTRON


def test_data_prep_then_pretrain_then_sft_sees_the_model(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), COLUMNS="250", RAY_DISABLE_USAGE_STATS="1")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(NEMOTRON), *args], cwd=tmp_path, env=env, text=True,
                              capture_output=True, timeout=600)

    prep = run("nano3", "data", "prep", "pretrain", "-c", "tiny", "sample=200")
    assert prep.returncode == 0, prep.stderr[-2000:]
    pre = run("nano3", "pretrain", "-c", "tiny")
    assert pre.returncode == 0, pre.stdout[-2000:] + pre.stderr[-2000:]
    assert "published nano3-pretrain-model-tiny:v1" in pre.stdout

    from nemo_runspec.artifacts.registry import ArtifactRegistry

    model = ArtifactRegistry(tmp_path / "home" / "artifacts").resolve("nano3-pretrain-model-tiny")
    assert any(Path(model.path).iterdir())  # the checkpoint is there
    assert model.metadata["backend"] == "torch-fallback" and model.metadata["format"] == "fallback-pt"
    sft = run("nano3", "sft", "-c", "tiny", "--dry-run")
    assert sft.returncode == 0, sft.stderr
    assert f"v1  {model.path}" in sft.stdout  # run.model resolves to the pretrain checkpoint

    assert run("nano3", "data", "prep", "sft", "-c", "tiny", "sample=60").returncode == 0
    sft = run("nano3", "sft", "-c", "tiny", "fallback.max_steps=2")
    assert sft.returncode == 0, sft.stdout[-2000:] + sft.stderr[-2000:]
    assert f"initialized from {model.path}" in sft.stdout
    initial = float(re.search(r"initial loss ([0-9.]+)", sft.stdout).group(1))
    scratch = run("nano3", "sft", "-c", "tiny", "fallback.max_steps=2", "+fallback.init_from_pretrained=false")
    assert scratch.returncode == 0 and "initialized from" not in scratch.stdout
    from_scratch = float(re.search(r"initial loss ([0-9.]+)", scratch.stdout).group(1))
    assert initial < from_scratch - 0.3  # the pretrained weights are really used
    assert from_scratch > math.log(4096) - 0.5  # and scratch starts near ln(vocab)
