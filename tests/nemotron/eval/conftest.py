"""Tiny data and checkpoints for the evaluation tests: a real data prep, then the CPU
fallback trainer, all offline and in a tmp registry under the tiny configs' names."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PRETRAIN = ROOT / "src/nemotron/recipes/nano3/stage0_pretrain"
WORDS = "alpha beta gamma delta river stone cloud paper light north quick brown fox jumps lazy dog".split()


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40))) + "." for _ in range(n)]


def train(ckpt_dir: Path, env: dict[str, str], steps: int, seed: int = 1234) -> Path:
    """Train the pretrain fallback for ``steps`` steps into ``ckpt_dir``; returns it."""
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, str(PRETRAIN / "train.py"), "--config", str(PRETRAIN / "config/tiny.yaml"),
                           f"fallback.max_steps={steps}", f"fallback.seed={seed}", "fallback.save_interval=0",
                           f"+fallback.checkpoint_dir={ckpt_dir}", "publish.name=null"],
                          cwd=ckpt_dir.parent, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return ckpt_dir


@pytest.fixture(scope="session")
def tiny(tmp_path_factory) -> dict:
    """Tokenizer (vocab 400), pretrain data with a test split, RL data with a validation
    split, a registry holding them, and two pretrain checkpoints (2 and 40 steps)."""
    from nemo_runspec.artifacts.registry import ArtifactRegistry
    from nemotron.data_prep.pretrain import run_pretrain
    from nemotron.data_prep.rl import run_rl
    from nemotron.data_prep.tokenizer import train_tokenizer

    root = tmp_path_factory.mktemp("evaldata")
    texts = sentences(400, 1)
    rng = random.Random(2)
    pairs = [(a, b) for a, b in ((rng.randint(0, 9), rng.randint(0, 9)) for _ in range(120))]
    tok = train_tokenizer(texts + [f"What is {a} + {b}? {a + b}" for a in range(10) for b in range(10)],
                          root / "tok", vocab_size=400)
    (root / "pt.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    (root / "rl.jsonl").write_text("".join(json.dumps({"prompt": f"What is {a} + {b}?", "answer": str(a + b)}) + "\n"
                                           for a, b in pairs))
    run_pretrain({"tokenizer": {"path": str(tok)}, "num_shards": 2, "workers": 0,
                  "input": {"paths": [str(root / "pt.jsonl")]}, "output_dir": str(root / "pt"), "split": "80,10,10"})
    run_rl({"input": {"paths": [str(root / "rl.jsonl")]}, "output_dir": str(root / "rl"), "num_shards": 2,
            "workers": 0, "split": "80,20"})
    reg = ArtifactRegistry(root / "registry")
    reg.publish("nano3-pretrain-data-tiny", root / "pt")
    reg.publish("nano3-rl-data-tiny", root / "rl")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_ARTIFACTS_ROOT=str(root / "registry"), NEMOTRON_HOME=str(root / "home"),
               PYTHONUNBUFFERED="1", COLUMNS="200")
    short = train(root / "short" / "checkpoints", env, steps=2)
    long = train(root / "long" / "checkpoints", env, steps=40)
    reg.publish("nano3-rl-model-tiny", long)  # what tiny.yaml evaluates by default
    return {"root": root, "tok": tok, "pt": root / "pt", "rl": root / "rl", "env": env, "registry": reg,
            "short": short, "long": long}
