"""A rerun skips a stage only while its published output is still all there.

The real `nano3 pipe` here (tiny configs). After a full run, one file of the
pretraining checkpoint is deleted: the rerun runs pretraining again and says what
was missing, while the data prep is still skipped. Then the data prep's output dir is
deleted: the rerun runs both (pretraining consumes it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from nemo_runspec.artifacts.registry import ArtifactRegistry

NEMOTRON = Path(sys.executable).with_name("nemotron")


def test_a_stage_whose_output_was_deleted_runs_again_and_says_what_is_missing(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "reg"),
               NEMOTRON_ENV_FILE=str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    args = [str(NEMOTRON), "nano3", "pipe", "-c", "tiny", "--stages", "prep-pretrain:pretrain",
            "pretrain.fallback.max_steps=2"]

    def pipe() -> str:
        proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stderr

    pipe()
    reg = ArtifactRegistry(tmp_path / "reg")
    model = reg.resolve("nano3-pretrain-model-tiny:latest")
    data = reg.resolve("nano3-pretrain-data-tiny:latest")
    files = sorted(p for p in Path(model.path).rglob("*") if p.is_file())
    assert files, model.path
    victim = files[-1]
    victim.unlink()

    second = pipe()
    assert re.search(r"prep-pretrain: skipped: ", second), second
    rel = victim.relative_to(model.path).as_posix()
    assert f"pretrain: running nano3/pretrain (runs: {model.ref} was made from the same config and inputs, " \
           f"but its files are gone from {model.path}: {rel})" in second, second

    shutil.rmtree(data.path)
    third = pipe()
    assert f"prep-pretrain: running nano3/data/prep/pretrain (runs: {data.ref} was made from the same config " \
           f"and inputs, but its files are gone from {data.path}: {data.path})" in third, third
    assert "pretrain: running nano3/pretrain (runs: prep-pretrain runs first)" in third
