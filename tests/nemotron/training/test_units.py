"""Unit tests of the tiny-GPT fallback: .bin/.idx reader vs megatron-core, masked loss, masks, checkpoints, backend rule."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from nemo_runspec.errors import ConfigError
from nemotron.data_prep.pretrain import run_pretrain
from nemotron.data_prep.tokenizer import train_tokenizer
from nemotron.training.checkpoint import latest_checkpoint, list_checkpoints, save_checkpoint
from nemotron.training.data import IndexedBin, PretrainWindows, load_blend, segment_ids_for
from nemotron.training.entry import choose_backend, native_config
from nemotron.training.tiny_gpt import GPTConfig, TinyGPT, masked_lm_loss

WORDS = "alpha beta gamma delta river stone cloud paper light north quick brown fox jumps lazy dog".split()


def docs(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 60))) for _ in range(n)]


@pytest.fixture(scope="module")
def pretrain_out(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pt")
    tok = train_tokenizer(docs(200, 1), root / "tok", vocab_size=300)
    corpus = root / "c.jsonl"
    corpus.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs(300)))
    run_pretrain({"input": {"paths": [str(corpus)]}, "tokenizer": {"path": str(tok)}, "output_dir": str(root / "out"),
                  "num_shards": 3, "split": "80,10,10", "workers": 0})
    return root / "out"


def test_reader_matches_megatron_core(pretrain_out):
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    blend = load_blend(pretrain_out)
    prefixes = [p for split in ("train", "valid") for _, p in blend[split]]
    assert len(prefixes) >= 4
    for prefix in prefixes:
        ours, ref = IndexedBin(prefix), IndexedDataset(prefix)
        assert len(ours) == len(ref) > 0
        assert ours.dtype == ref.index.dtype
        np.testing.assert_array_equal(ours.sequence_lengths, ref.sequence_lengths)
        np.testing.assert_array_equal(ours.document_indices, ref.document_indices)
        for i in range(len(ref)):
            np.testing.assert_array_equal(ours[i], ref[i])
        assert ours.num_tokens == int(ref.sequence_lengths.sum())


def test_blend_weights_respected(pretrain_out):
    blend = load_blend(pretrain_out)
    entries = blend["train"]
    # Give the first dataset 90% of the weight: ~90% of windows must come from it.
    skewed = [(9.0 if i == 0 else 1.0 / (len(entries) - 1), p) for i, (_, p) in enumerate(entries)]
    w = PretrainWindows(skewed, seq_length=8, seed=3)
    first = w.usable[0]
    stream = np.asarray(first.tokens)
    hits = 0
    for i in range(400):
        win = w.sample(i)
        assert len(win) == 9
        # a window from the first dataset occurs verbatim in its token stream
        hits += any(np.array_equal(stream[s : s + 9], win) for s in np.flatnonzero(stream == win[0]))
    assert 320 <= hits <= 395
    np.testing.assert_array_equal(w.sample(7), PretrainWindows(skewed, 8, 3).sample(7))


def test_masked_loss_counts_only_mask_one():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 11, requires_grad=True)
    targets = torch.randint(0, 11, (2, 5))
    mask = torch.tensor([[0, 1, 1, 0, 0], [1, 0, 0, 0, 1]])
    loss = masked_lm_loss(logits, targets, mask)
    picked = [(b, t) for b in range(2) for t in range(5) if mask[b, t]]
    manual = sum(-torch.log_softmax(logits[b, t], -1)[targets[b, t]] for b, t in picked) / len(picked)
    assert torch.allclose(loss, manual)
    loss.backward()
    grad_norm = logits.grad.norm(dim=-1)
    assert torch.all(grad_norm[mask == 0] == 0)
    assert torch.all(grad_norm[mask == 1] > 0)
    # changing logits where mask == 0 does not change the loss
    other = logits.detach().clone()
    other[mask == 0] += 100 * torch.randn_like(other[mask == 0])
    assert torch.allclose(masked_lm_loss(other, targets, mask), loss.detach())
    # without a mask it is the plain mean cross-entropy
    assert torch.allclose(masked_lm_loss(logits.detach(), targets),
                          torch.nn.functional.cross_entropy(logits.detach().reshape(-1, 11), targets.reshape(-1)))


def test_attention_does_not_cross_pack_boundaries():
    torch.manual_seed(0)
    model = TinyGPT(GPTConfig(vocab_size=50, seq_length=16, n_layer=2, n_head=2, d_model=16)).eval()
    seg = torch.from_numpy(segment_ids_for([0, 6], 11, 16))[None]
    a = torch.randint(0, 50, (1, 16))
    b = a.clone()
    b[0, :6] = (a[0, :6] + 7) % 50  # change only the first conversation
    with torch.no_grad():
        la, lb = model(a, seg), model(b, seg)
    assert torch.allclose(la[0, 6:11], lb[0, 6:11], atol=1e-5)  # second conversation unaffected
    assert not torch.allclose(la[0, :6], lb[0, :6])
    # the second conversation sees positions restarting at 0: same as running it alone
    with torch.no_grad():
        alone = model(a[:, 6:11])
    assert torch.allclose(la[0, 6:11], alone[0], atol=1e-5)
    # without segments the change leaks forward (the mask is what prevents it)
    with torch.no_grad():
        assert not torch.allclose(model(a)[0, 6:11], model(b)[0, 6:11])


def test_segment_ids_and_sft_loss_mask_boundaries():
    from nemotron.training.data import Packs

    seg = segment_ids_for([0, 3], 5, 8)
    assert seg.tolist() == [0, 0, 0, 1, 1, 2, 2, 2]
    ids = np.arange(8)[None]
    # label-aligned (Megatron-Bridge's packed layout): position j trains token j + 1; each
    # conversation's last position is 0. Token mask [0, 1, 1 | 1, 1 | pad] becomes:
    mask = np.array([[1, 1, 0, 1, 0, 0, 0, 0]])
    b = Packs(ids, mask, seg[None]).batch([0], seq_length=7)
    # target 3 starts conversation 1: predicting it from conversation 0 is not trained
    assert b["loss_mask"].tolist() == [[1, 1, 0, 1, 0, 0, 0]]
    # a stray 1 at a conversation's last position still never trains across the boundary
    b = Packs(ids, np.array([[1, 1, 1, 1, 1, 0, 0, 0]]), seg[None]).batch([0], seq_length=7)
    assert b["loss_mask"].tolist() == [[1, 1, 0, 1, 0, 0, 0]]
    assert b["targets"].tolist() == [[1, 2, 3, 4, 5, 6, 7]]


def test_checkpoint_atomic_and_latest(tmp_path):
    d = tmp_path / "ck"
    assert latest_checkpoint(d) is None
    for step in (5, 10, 15):
        save_checkpoint(d, {"step": step, "w": torch.ones(3) * step}, step, keep=2)
    (d / ".step_00000020.pt.tmp-1").write_bytes(b"partial")  # a crashed write is ignored
    (d / "step_00000030.pt.tmp").write_bytes(b"partial")
    assert [s for s, _ in list_checkpoints(d)] == [10, 15]
    latest = latest_checkpoint(d)
    assert torch.load(latest)["step"] == 15


def _cfg(text: str):
    return OmegaConf.create(text)


def test_backend_rule():
    native_missing = "surely_not_installed_pkg.sub"
    native_present = "json"
    assert choose_backend(_cfg("a: 1"), native_missing) == "missing"
    assert choose_backend(_cfg("fallback: {model: {}}"), native_missing) == "torch"
    assert choose_backend(_cfg("fallback: {enabled: auto}"), native_present) == "native"
    assert choose_backend(_cfg("fallback: {enabled: true}"), native_present) == "torch"
    assert choose_backend(_cfg("backend: torch"), native_present) == "torch"
    assert choose_backend(_cfg("fallback: {enabled: false}"), native_missing) == "missing"
    assert choose_backend(_cfg("backend: native\nfallback: {}"), native_missing) == "missing"
    with pytest.raises(ConfigError, match="backend"):
        choose_backend(_cfg("backend: tpu"), native_missing)


def test_native_config_drops_only_the_launcher_sections():
    cfg = _cfg("run: {mode: local}\nfallback: {enabled: auto}\npublish: {name: m}\n"
               "backend: auto\ntrain: {iters: 3}\nckpt: ${train.iters}")
    assert native_config(cfg) == {"backend": "auto", "train": {"iters": 3}, "ckpt": 3}


def test_native_probe_skips_the_import_when_a_needed_module_is_absent(monkeypatch):
    """The GPU stack's first import (transformer_engine for Megatron-Bridge) is checked
    by name first, so a CPU machine does not pay a multi-second failing import."""
    import sys

    from nemotron.training import entry

    monkeypatch.delitem(sys.modules, "csv", raising=False)
    monkeypatch.setattr(entry, "NATIVE_NEEDS", {"csv": ("no_such_module_for_nemotron",)})
    assert entry.native_usable("csv") is False
    assert "csv" not in sys.modules  # decided without importing it
    monkeypatch.setattr(entry, "NATIVE_NEEDS", {"csv": ("json",)})
    assert entry.native_usable("csv") is True
