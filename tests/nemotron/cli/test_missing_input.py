"""SFT on a fresh home after only its data prep: the CLI stops before anything runs with
one line naming the missing pretrain model and the key that uses it, and training from
scratch on purpose (that key set to null) works (docs/training.md)."""

from __future__ import annotations

import os
import subprocess

from tests.nemotron_cli import NEMOTRON


def test_sft_without_a_pretrain_model(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "reg"),
               COLUMNS="250", TERM="dumb")

    def nemotron(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(NEMOTRON), *args], env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=300, stdin=subprocess.DEVNULL)

    prep = nemotron("nano3", "data", "prep", "sft", "-c", "tiny")
    assert prep.returncode == 0, prep.stderr[-2000:]
    proc = nemotron("nano3", "sft", "-c", "tiny")
    assert proc.returncode == 2, proc.stdout[-2000:]
    assert "Traceback" not in proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert "nano3-pretrain-model-tiny:latest (used by checkpoint.pretrained_checkpoint)" in line
    assert "set checkpoint.pretrained_checkpoint=null" in line
    assert not list((tmp_path / "home" / "jobs").glob("nano3-sft*"))  # nothing ran
    scratch = nemotron("nano3", "sft", "-c", "tiny", "checkpoint.pretrained_checkpoint=null",
                       "fallback.max_steps=2", "fallback.eval_interval=0", "fallback.save_interval=0")
    assert scratch.returncode == 0, scratch.stderr[-2000:]
    assert "final loss" in scratch.stdout and "initialized from" not in scratch.stdout
