"""Each stage starts from the previous stage's checkpoint, records it, and the evaluation
walks that record back into the chain's table (nemotron.training.eval_chain)."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from nemotron.training.checkpoint import save_checkpoint
from nemotron.training.entry import _pretrained_dir
from nemotron.training.eval_chain import evaluate_chain, lineage, table_lines

RECIPES = Path(__file__).resolve().parents[3] / "src" / "nemotron" / "recipes" / "nano3"


def _ckpt(tmp_path, name: str, task: str, step: int, origin=None):
    return save_checkpoint(tmp_path / name, {"step": step, "task": task, "model": {}, "init_from": origin}, step)


def _info(path, task: str, step: int, origin) -> dict:
    return {"checkpoint": str(path), "step": step, "stage": task, "init_from": origin,
            "model_config": {"vocab_size": 4096}}


def test_lineage_walks_back_oldest_first_and_stops_at_a_missing_checkpoint(tmp_path):
    pre = _ckpt(tmp_path, "pre", "pretrain", 30)
    sft = _ckpt(tmp_path, "sft", "sft", 20, {"checkpoint": str(pre), "step": 30})
    rl = _info(tmp_path / "rl/step_00000010.pt", "rl-smoke", 10, {"checkpoint": str(sft), "step": 20})
    assert lineage(rl) == [{"checkpoint": str(pre), "step": 30, "stage": "pretrain"},
                           {"checkpoint": str(sft), "step": 20, "stage": "sft"}]
    pre.unlink()
    assert lineage(rl) == [{"checkpoint": str(pre), "step": 30, "missing": True},
                           {"checkpoint": str(sft), "step": 20, "stage": "sft"}]
    assert lineage(_info(pre, "pretrain", 30, None)) == []


def test_a_loop_of_records_ends(tmp_path):
    a = tmp_path / "a" / "step_00000001.pt"
    b = _ckpt(tmp_path, "b", "sft", 1, {"checkpoint": str(a), "step": 1})
    _ckpt(tmp_path, "a", "pretrain", 1, {"checkpoint": str(b), "step": 1})
    assert [x["stage"] for x in lineage(_info(b, "sft", 1, {"checkpoint": str(a), "step": 1}))] == ["pretrain"]


def test_table_has_the_uniform_baseline_and_a_row_per_model(tmp_path):
    pre = _ckpt(tmp_path, "pre", "pretrain", 30)
    evaluated = {"perplexity": 900.0, "answer_loss": 3.5, "exact_match": 0.25}
    answers = {"correct": 1, "samples": 4, "split": "validation"}
    tasks = {"heldout_perplexity": {"tokens": 100, "split": "test"}, "answer_exact_match": answers}
    rows = evaluate_chain(_info(tmp_path / "rl.pt", "rl-smoke", 5, {"checkpoint": str(pre), "step": 30}), evaluated,
                          load=lambda path: (path, {}),
                          run=lambda model: ({"answer_exact_match": {"correct": 0, "samples": 4}},
                                             {"perplexity": 700.0, "answer_loss": 7.0, "exact_match": 0.0}))
    assert [r["model"] for r in rows] == ["uniform", "pretrain", "rl-smoke"]
    assert rows[0]["metrics"] == {"perplexity": 4096.0}
    lines = table_lines(rows, tasks)
    assert lines[0] == ("[eval] the chain: perplexity on 100 held-out tokens (test split); "
                        "exact-match answers to 4 validation prompts")
    cells = [line.split() for line in lines[2:]]
    assert cells[0][-4:] == ["-", "4096.0", "-", "-"]
    assert cells[1] == ["after", "pretrain", "30", "700.0", "7.000", "0.0%", "(0/4)"]
    assert cells[2] == ["after", "rl-smoke", "(evaluated)", "5", "900.0", "3.500", "25.0%", "(1/4)"]


@pytest.mark.parametrize(("kind", "key"), [("sft", "checkpoint"), ("rl", "policy")])
def test_sft_and_rl_start_from_the_model_their_config_names(tmp_path, kind, key):
    name = "pretrained_checkpoint" if kind == "sft" else "model_name"
    cfg = OmegaConf.create({key: {name: str(tmp_path / "prev")}})
    assert _pretrained_dir(cfg, kind) == str(tmp_path / "prev")
    cfg.fallback = {"init_from_pretrained": False}
    assert _pretrained_dir(cfg, kind) is None
    assert _pretrained_dir(OmegaConf.create({key: {name: str(tmp_path)}}), "pretrain") is None


def test_threads_per_process_come_from_the_config():
    import torch

    from nemo_runspec.errors import ConfigError
    from nemotron.training.loop import Settings, init_distributed

    before = torch.get_num_threads()
    try:
        init_distributed("cpu", Settings.from_config({"threads": 1}).threads)
        assert torch.get_num_threads() == 1
        with pytest.raises(ConfigError, match=r"fallback.threads. must be an integer >= 1 or null, got 0"):
            Settings.from_config({"threads": 0})
    finally:
        torch.set_num_threads(before)
    for stage in ("stage0_pretrain", "stage1_sft", "stage2_rl", "eval"):  # the tiny chain runs on one thread each
        cfg = OmegaConf.load(RECIPES / stage / "config" / "tiny.yaml")
        assert cfg.fallback.threads == 1, stage
