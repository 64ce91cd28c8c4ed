"""End-to-end runs of the nano3 train.py scripts on the tiny torch fallback (real data prep, registry, torchrun)."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nemo_runspec.artifacts.registry import ArtifactRegistry
from nemotron.data_prep.pretrain import run_pretrain
from nemotron.data_prep.rl import run_rl
from nemotron.data_prep.sft import run_sft
from nemotron.data_prep.tokenizer import train_tokenizer
from tests.nemotron_cli import NEMOTRON

ROOT = Path(__file__).resolve().parents[3]
RECIPES = ROOT / "src" / "nemotron" / "recipes" / "nano3"
STAGES = {"pretrain": "stage0_pretrain", "sft": "stage1_sft", "rl": "stage2_rl"}
WORDS = "alpha beta gamma delta river stone cloud paper light north quick brown fox jumps lazy dog".split()


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40))) + "." for _ in range(n)]


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    """Tiny tokenizer + corpus -> real data prep -> published in a tmp registry under the tiny configs' names."""
    root = tmp_path_factory.mktemp("train")
    texts = sentences(400, 1)
    tok = train_tokenizer(texts + [f"What is {a} + {b}? {a + b}" for a in range(30) for b in range(30)],
                          root / "tok", vocab_size=400)
    (root / "pt.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    rng = random.Random(2)
    (root / "sft.jsonl").write_text("".join(json.dumps({"messages": [
        {"role": "user", "content": q}, {"role": "assistant", "content": a}]}) + "\n"
        for q, a in zip(sentences(150, 3), sentences(150, 4), strict=True)))
    (root / "rl.jsonl").write_text("".join(
        json.dumps({"prompt": f"What is {a} + {b}?", "answer": str(a + b)}) + "\n"
        for a, b in ((rng.randint(0, 20), rng.randint(0, 20)) for _ in range(200))))
    base = {"tokenizer": {"path": str(tok)}, "num_shards": 2, "workers": 0}
    run_pretrain({**base, "input": {"paths": [str(root / "pt.jsonl")]}, "output_dir": str(root / "pt"), "split": "90,10,0"})
    run_sft({**base, "input": {"paths": [str(root / "sft.jsonl")]}, "output_dir": str(root / "sft"),
             "pack_size": 128, "split": "90,10,0"})
    run_rl({"input": {"paths": [str(root / "rl.jsonl")]}, "output_dir": str(root / "rl"), "num_shards": 2,
            "workers": 0, "split": "85,15"})
    reg = ArtifactRegistry(root / "registry")
    for kind in ("pretrain", "sft", "rl"):
        reg.publish(f"nano3-{kind}-data-tiny", root / ("pt" if kind == "pretrain" else kind))
    e = dict(os.environ)
    e.pop("NEMOTRON_JOB_DIR", None)
    e.update(NEMOTRON_ARTIFACTS_ROOT=str(root / "registry"), NEMOTRON_HOME=str(root / "home"),
             PYTHONUNBUFFERED="1", TOKENIZER=str(tok))
    # SFT's tiny config starts from the pretrain stage's published model: publish one here,
    # so that no SFT test depends on a pretrain test having run before it in this process
    # (pytest-xdist spreads a module's tests over workers; -k may pick one test)
    seed = run("pretrain", root / "seed-pretrain", e, "fallback.max_steps=2", "fallback.save_interval=0")
    assert seed.returncode == 0, seed.stderr
    assert reg.resolve("nano3-pretrain-model-tiny:latest"), "the pretrain run published no model"
    return e


def run(kind: str, cwd: Path, env: dict[str, str], *args: str, nproc: int = 1, config: str = "tiny",
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    script = RECIPES / STAGES[kind] / "train.py"
    cfg = RECIPES / STAGES[kind] / "config" / f"{config}.yaml"
    launcher = [sys.executable] if nproc == 1 else [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run([*launcher, str(script), "--config", str(cfg), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def summary(out: str) -> dict[str, float]:
    m = re.search(r"final loss ([\d.]+) \| steps (\d+) \| tokens (\d+) \| ([\d.]+) s", out)
    assert m, out
    init = re.search(r"initial loss ([\d.]+)", out)
    return {"final": float(m.group(1)), "steps": int(m.group(2)), "tokens": int(m.group(3)),
            "initial": float(init.group(1)) if init else float("nan")}


def test_pretrain_single_process_learns_and_checkpoints(tmp_path, env):
    p = run("pretrain", tmp_path / "job", env, "fallback.max_steps=40")
    assert p.returncode == 0, p.stderr
    s = summary(p.stdout)
    assert s["steps"] == 40
    assert s["tokens"] == 40 * 8 * 64  # steps * micro batch * seq_length of the tiny config
    assert s["final"] < s["initial"] - 0.5
    ck = sorted((tmp_path / "job" / "checkpoints").glob("step_*.pt"))
    assert ck and ck[-1].name == "step_00000040.pt"
    import torch

    state = torch.load(ck[-1], weights_only=False)
    assert state["step"] == 40 and "optimizer" in state and state["model"]
    assert "eval loss" in p.stdout and "tok/s" in p.stdout
    assert not list((tmp_path / "job" / "checkpoints").glob(".*tmp*"))


def test_two_process_ddp_ranks_agree(tmp_path, env):
    p = run("pretrain", tmp_path / "job", env, "fallback.max_steps=12", nproc=2, timeout=180)
    assert p.returncode == 0, p.stdout + p.stderr
    hashes = dict(re.findall(r"rank (\d) param sha256 ([0-9a-f]{64})", p.stdout))
    assert set(hashes) == {"0", "1"}, p.stdout
    assert hashes["0"] == hashes["1"]
    s = summary(p.stdout)
    assert s["tokens"] == 12 * 2 * 8 * 64  # both ranks' tokens are counted
    assert "world 2" in p.stdout
    # the documented order: every rank's digest line, then rank 0's final loss line
    lines = p.stdout.splitlines()
    final = next(i for i, ln in enumerate(lines) if "] final loss " in ln)
    assert max(i for i, ln in enumerate(lines) if "param sha256" in ln) < final, p.stdout
    # the DDP result differs from a single-process run (each rank saw other data)
    single = run("pretrain", tmp_path / "single", env, "fallback.max_steps=12")
    assert re.search(r"rank 0 param sha256 ([0-9a-f]{64})", single.stdout).group(1) != hashes["0"]


RANK1_DELAY_HOOK = """
# Test hook (sitecustomize): rank 1 of a torchrun job computes its parameter digest
# RANK1_DELAY seconds late, so its "param sha256" line would come after rank 0's
# "final loss" line unless the trainer waits for every rank before its last line.
import importlib.abc, importlib.util, os, sys, time

class _Delay(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "nemotron.training.loop":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            digest = module.param_digest

            def late(model):
                time.sleep(float(os.environ["RANK1_DELAY"]))
                return digest(model)

            module.param_digest = late

        spec.loader.exec_module = exec_module
        return spec

if os.environ.get("RANK") == "1" and os.environ.get("RANK1_DELAY"):
    sys.meta_path.insert(0, _Delay())
"""


def test_local_nproc_2_rank_1_lines_come_before_rank_0s_final_line_even_when_rank_1_is_late(tmp_path, env):
    """docs/training.md "Output": with run.env.local_nproc=2 (the CPU fallback, two processes
    through torch.distributed.run) every rank's digest line precedes rank 0's final line,
    deterministically: rank 1 is held back 3 s and still comes first."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(RANK1_DELAY_HOOK)
    e = dict(env, RANK1_DELAY="3", PYTHONPATH=os.pathsep.join(filter(None, [str(hook), env.get("PYTHONPATH")])),
             CUDA_VISIBLE_DEVICES="")
    nemotron = NEMOTRON
    (tmp_path / "job").mkdir()
    p = subprocess.run([str(nemotron), "nano3", "pretrain", "-c", "tiny", "run.env.local_nproc=2",
                        "fallback.max_steps=4", "fallback.save_interval=0"], cwd=tmp_path / "job", env=e,
                       capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "world 2" in p.stdout, p.stdout[-3000:]
    lines = p.stdout.splitlines()
    rank1 = next(i for i, ln in enumerate(lines) if "rank 1 param sha256" in ln)
    final = next(i for i, ln in enumerate(lines) if "] final loss " in ln)
    assert rank1 < final, p.stdout[-3000:]


def test_resume_continues_step_counter(tmp_path, env):
    job = tmp_path / "job"
    first = run("pretrain", job, env, "fallback.max_steps=10", "fallback.save_interval=0")
    assert first.returncode == 0, first.stderr
    assert summary(first.stdout)["steps"] == 10
    second = run("pretrain", job, env, "fallback.max_steps=20", "fallback.save_interval=0")
    assert second.returncode == 0, second.stderr
    assert re.search(r"resumed from .*step_00000010\.pt at step 10", second.stdout), second.stdout
    assert "step 5/20" not in second.stdout and "step 15/20" in second.stdout
    s = summary(second.stdout)
    assert s["steps"] == 20 and s["tokens"] == 20 * 8 * 64
    assert (job / "checkpoints" / "step_00000020.pt").is_file()
    # the resumed run starts from the trained weights, not from scratch
    assert s["initial"] < summary(first.stdout)["initial"] - 0.3


def test_sft_fallback_runs(tmp_path, env):
    p = run("sft", tmp_path / "job", env, "fallback.max_steps=30", "fallback.seq_length=null")
    assert p.returncode == 0, p.stderr
    s = summary(p.stdout)
    assert s["steps"] == 30 and s["final"] < s["initial"]
    assert "seq 127" in p.stdout  # pack_size 128 of the prepared data, minus the shift
    assert (tmp_path / "job" / "checkpoints" / "step_00000030.pt").is_file()


def test_rl_smoke_fallback_runs(tmp_path, env):
    p = run("rl", tmp_path / "job", env, f"fallback.tokenizer={env['TOKENIZER']}", "fallback.max_steps=20")
    assert p.returncode == 0, p.stderr
    assert "CPU smoke fallback, not RL" in p.stdout
    m = re.search(r"validation accuracy (\d+)/(\d+)", p.stdout)
    assert m and int(m.group(2)) > 0
    s = summary(p.stdout)
    assert s["steps"] == 20 and s["final"] < s["initial"]


def test_missing_data_is_one_line_error(tmp_path, env):
    p = run("pretrain", tmp_path / "job", env, "data.data_path=/nonexistent/pretrain-data")
    assert p.returncode != 0
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "/nonexistent/pretrain-data" in lines[0], p.stderr
    # an artifact that was never published: also one line, naming it
    bad = dict(env, NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "empty-registry"))
    p = run("sft", tmp_path / "job2", bad)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "nano3-sft-data-tiny" in lines[0], p.stderr


def test_default_config_without_backend_exits_3(tmp_path, env):
    from nemotron.training.entry import importable, native_usable

    if native_usable("megatron.bridge"):
        pytest.skip("megatron.bridge imports here (a GPU stack): the native backend would run")
    p = run("pretrain", tmp_path / "job", env, config="default")
    assert p.returncode == 3
    # the test venv holds the pinned wheel without transformer-engine: found, but unusable
    expected = "cannot run here (no GPU stack)" if importable("megatron.bridge") else "is not installed"
    assert f"megatron.bridge {expected}" in p.stderr
    from nemo_runspec import parse

    assert f"({parse(RECIPES / STAGES['pretrain'] / 'train.py').image})" in p.stderr  # the runspec's image
