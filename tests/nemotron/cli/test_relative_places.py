"""A relative NEMOTRON_ARTIFACTS_ROOT (and NEMOTRON_HOME) is one place for every stage.

Each local stage runs in its own job dir; with ``NEMOTRON_ARTIFACTS_ROOT=reg`` the
data prep published into ``<its job dir>/reg`` and pretraining, in another job dir,
looked for it elsewhere. The CLI resolves both variables once, when it starts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from nemo_runspec.artifacts.registry import ArtifactRegistry

NEMOTRON = Path(sys.executable).with_name("nemotron")


def test_a_relative_registry_root_is_the_same_registry_for_every_stage(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME="home", NEMOTRON_ARTIFACTS_ROOT="reg", NEMOTRON_ENV_FILE=str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    args = [str(NEMOTRON), "nano3", "pipe", "-c", "tiny", "--stages", "prep-pretrain:pretrain",
            "pretrain.fallback.max_steps=2"]
    first = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
                           stdin=subprocess.DEVNULL)
    assert first.returncode == 0, first.stderr[-3000:]
    reg = ArtifactRegistry(tmp_path / "reg")
    assert {"nano3-pretrain-data-tiny", "nano3-pretrain-model-tiny"} <= set(reg.list()), reg.list()
    assert (tmp_path / "home" / "jobs").is_dir()
    assert not list((tmp_path / "home" / "jobs").rglob("reg"))  # nothing published into a job dir
    again = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
                           stdin=subprocess.DEVNULL)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stderr.count("skipped:") == 2, again.stderr[-3000:]
