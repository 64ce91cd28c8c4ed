"""The CPU fallback evaluates tiny checkpoints for real: perplexity and exact match."""

from __future__ import annotations

import json
import math

import pytest

from nemo_runspec.errors import ConfigError
from nemotron.training import evaluate as E


def _plan(tiny: dict, ckpt, *, tokenizer=None, tasks=None) -> dict:
    return {"backend": "torch-fallback", "model": {"path": str(ckpt), "ref": "test"},
            "tokenizer": str(tokenizer or tiny["tok"]), "device": "cpu", "batch_size": 8,
            "tasks": tasks or [
                {"name": "heldout_perplexity", "data": str(tiny["pt"]), "split": "test"},
                {"name": "answer_exact_match", "data": str(tiny["rl"]), "split": "validation",
                 "max_new_tokens": 4, "samples": None}]}


def _test_tokens(tiny: dict) -> int:
    """Tokens a held-out pass predicts: all of the test split but the first of each dataset."""
    from nemotron.training.data import IndexedBin, load_blend

    return sum(IndexedBin(prefix).num_tokens - 1 for _, prefix in load_blend(tiny["pt"])["test"])


def _validation_records(tiny: dict) -> int:
    return sum(1 for line in (tiny["rl"] / "validation.jsonl").read_text().splitlines() if line.strip())


def test_trained_checkpoint_gives_sane_metrics(tiny):
    res = E.run_fallback(_plan(tiny, tiny["long"]))
    m = res["metrics"]
    vocab = res["model"]["model_config"]["vocab_size"]
    assert math.isfinite(m["perplexity"]) and 1.0 < m["perplexity"] < vocab / 4  # far better than uniform
    assert m["heldout_loss"] == pytest.approx(math.log(m["perplexity"]))
    held = res["tasks"]["heldout_perplexity"]
    assert held["tokens"] == _test_tokens(tiny) > 0 and held["split"] == "test"
    ans = res["tasks"]["answer_exact_match"]
    assert ans["samples"] == _validation_records(tiny) > 0
    assert 0.0 <= m["exact_match"] <= 1.0 and m["exact_match"] == ans["correct"] / ans["samples"]
    assert 0.0 <= m["answer_token_accuracy"] <= 1.0 and math.isfinite(m["answer_loss"])
    assert res["model"]["step"] == 40 and res["model"]["stage"] == "pretrain"


def test_numbers_follow_the_checkpoint_and_repeat_exactly(tiny):
    long = E.run_fallback(_plan(tiny, tiny["long"]))["metrics"]
    short = E.run_fallback(_plan(tiny, tiny["short"]))["metrics"]
    again = E.run_fallback(_plan(tiny, tiny["long"]))["metrics"]
    assert again == long  # deterministic: same checkpoint, same numbers
    assert long["perplexity"] < short["perplexity"] * 0.7  # 40 steps beat 2 steps clearly
    assert long["answer_loss"] != short["answer_loss"]


class _Stub:
    """A model with uniform logits (and, as an oracle, the right greedy answer)."""

    def __init__(self, vocab: int, context: int, tok=None, eos: int = 0) -> None:
        import torch

        from nemotron.training.tiny_gpt import GPTConfig

        self.cfg = GPTConfig(vocab_size=vocab, seq_length=context)
        self._p = torch.nn.Parameter(torch.zeros(1))
        self.tok, self.eos = tok, eos

    def parameters(self):
        return iter([self._p])

    def __call__(self, idx):
        import torch

        return torch.zeros(*idx.shape, self.cfg.vocab_size)

    def generate(self, idx, max_new_tokens, stop_id=None):
        if self.tok is None:
            return []
        prompt = self.tok.decode(idx[0].tolist())  # "What is a + b?\n"
        a, b = (int(x) for x in prompt.split("is ")[1].split("?")[0].split(" + "))
        return self.tok.encode(str(a + b), add_special_tokens=False).ids


def test_uniform_model_has_perplexity_equal_to_vocab(tiny):
    res = E.heldout_perplexity(_Stub(400, 16), str(tiny["pt"]), split="test", batch_size=5)
    assert res["loss"] == pytest.approx(math.log(400), rel=1e-5)  # float32 sums
    assert res["perplexity"] == pytest.approx(400, rel=1e-5)
    assert res["tokens"] == _test_tokens(tiny)  # every token but the first, whatever the window size


def test_exact_match_counts_right_and_wrong_answers(tiny):
    from nemotron.data_prep.tokenizer import load_tokenizer

    info = load_tokenizer(str(tiny["tok"]))
    oracle = E.answer_exact_match(_Stub(400, 32, info.load(), info.eod_id()), str(tiny["rl"]),
                                  tokenizer=str(tiny["tok"]), max_new_tokens=4)
    assert oracle["exact_match"] == 1.0 and oracle["correct"] == oracle["samples"] == _validation_records(tiny)
    assert oracle["answer_loss"] == pytest.approx(math.log(400), rel=1e-5)
    mute = E.answer_exact_match(_Stub(400, 32), str(tiny["rl"]), tokenizer=str(tiny["tok"]), samples=5)
    assert mute["exact_match"] == 0.0 and mute["samples"] == 5


def test_mismatches_and_missing_inputs_are_config_errors(tiny, tmp_path):
    from nemotron.data_prep.paths import resolve_pkg

    sample_tok = resolve_pkg("pkg:nemotron/recipes/nano3/sample_data/tokenizer")  # 4096 tokens; the model has <= 400
    with pytest.raises(ConfigError, match=r"has 4096 tokens, the model \d+ "):
        E.run_fallback(_plan(tiny, tiny["long"], tokenizer=sample_tok))
    with pytest.raises(ConfigError, match="no 'nope' split"):
        E.run_fallback(_plan(tiny, tiny["long"], tasks=[{"name": "heldout_perplexity", "data": str(tiny["pt"]),
                                                         "split": "nope"}]))
    with pytest.raises(ConfigError, match="no CPU-fallback checkpoint"):
        E.run_fallback(_plan(tiny, tmp_path))


def test_results_json_and_summary_line(tiny, tmp_path, monkeypatch):
    """eval.py itself: eval.yaml and results.json in the job dir, published, last line the summary."""
    import subprocess
    import sys

    from tests.nemotron.eval.conftest import ROOT

    script = ROOT / "src/nemotron/recipes/nano3/eval/eval.py"
    cfg = ROOT / "src/nemotron/recipes/nano3/eval/config/tiny.yaml"
    env = {**tiny["env"], "NEMOTRON_JOB_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(script), "--config", str(cfg), f"fallback.tokenizer={tiny['tok']}",
                           "--task", "heldout_perplexity"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    *_, last, outcome_line = proc.stdout.strip().splitlines()
    results = json.loads((tmp_path / "results.json").read_text())
    ppl = results["metrics"]["perplexity"]
    from nemo_runspec.runtime.outcome import parse_line

    outcome = parse_line(outcome_line)  # the job's last word: its eval line again, the metrics as figures
    assert outcome is not None and outcome.ok and outcome.message == last and outcome.figures["perplexity"] == ppl
    assert last.startswith("eval: perplexity=") and f"model={results['model']['ref']}" in last
    assert set(results["tasks"]) == {"heldout_perplexity"}
    assert results["model"]["ref"] == "nano3-rl-model-tiny:v1" and results["model"]["step"] == 40
    saved = (tmp_path / "eval.yaml").read_text()
    assert str(tiny["long"]) in saved and "${art:" not in saved  # resolved when the job started
    art = tiny["registry"].resolve("nano3-eval-tiny:latest")
    assert art.path == str(tmp_path / "results.json")
    assert art.metadata["metrics"]["perplexity"] == pytest.approx(ppl)
    assert art.metadata["model"] == "nano3-rl-model-tiny:v1" and art.metadata["backend"] == "torch-fallback"
