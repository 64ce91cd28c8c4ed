"""The three fallback tasks: pretrain (LM windows), SFT (masked packs), RL smoke (supervised prompt->answer)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nemo_runspec.errors import ConfigError

from .data import PretrainWindows, load_blend, load_packs, load_rl_split, read_metadata
from .loop import Settings


def _vocab_from_metadata(meta: dict[str, Any]) -> int | None:
    v = (meta.get("tokenizer") or {}).get("vocab_size")
    return int(v) if v else None


def _shuffled_row(seed: int, i: int, n: int) -> int:
    """Row of sample ``i`` out of ``n`` rows: each pass over the data is its own seeded permutation."""
    return int(np.random.default_rng([seed, i // n]).permutation(n)[i % n])


class PretrainTask:
    """Next-token LM on fixed-length windows of the blend's ``train`` split; eval on ``valid``."""

    name = "pretrain"

    def __init__(self, data_path: str, s: Settings) -> None:
        blend = load_blend(data_path)
        if not blend.get("train"):
            raise ConfigError(f"blend.json under {data_path} has no train split", key="data.data_path")
        self.seq_length = int(s.seq_length or 64)
        self.train = PretrainWindows(blend["train"], self.seq_length, s.seed)
        self.valid = None
        if blend.get("valid"):
            try:
                self.valid = PretrainWindows(blend["valid"], self.seq_length, s.seed + 1)
            except ConfigError:
                self.valid = None  # too small to cut a window: no eval
        top = max(self.train.max_token_id, self.valid.max_token_id if self.valid else 0)
        self.vocab_size = max(_vocab_from_metadata(read_metadata(data_path)) or 0, top + 1)

    def train_batch(self, indices: list[int]) -> dict[str, Any]:
        return self.train.batch(indices)

    def eval_batches(self, micro_batch_size: int, n: int) -> list[dict[str, Any]]:
        if self.valid is None:
            return []
        return [self.valid.batch(list(range(b * micro_batch_size, (b + 1) * micro_batch_size))) for b in range(n)]

    def final_report(self, model: Any, log: Callable[[str], None]) -> dict[str, Any]:
        return {}


class SFTTask:
    """Packed conversations (the data prep's Megatron-Bridge ``packed/*.npy``): loss only where the
    label-aligned ``loss_mask`` is 1, attention block-diagonal per conversation."""

    name = "sft"

    def __init__(self, data_path: str, s: Settings) -> None:
        train = load_packs(data_path, "train")
        if train is None or not len(train):
            raise ConfigError(f"no train packs under {data_path}", key="data.data_path",
                              hint="rerun the SFT data prep")
        self.train = train
        self.valid = load_packs(data_path, "valid")
        pack = train.input_ids.shape[1]
        self.seq_length = min(int(s.seq_length), pack - 1) if s.seq_length else pack - 1
        self.seed = s.seed
        top = int(train.input_ids.max())
        if self.valid is not None and len(self.valid):
            top = max(top, int(self.valid.input_ids.max()))
        self.vocab_size = max(_vocab_from_metadata(read_metadata(data_path)) or 0, top + 1)

    def train_batch(self, indices: list[int]) -> dict[str, Any]:
        return self.train.batch([_shuffled_row(self.seed, i, len(self.train)) for i in indices], self.seq_length)

    def eval_batches(self, micro_batch_size: int, n: int) -> list[dict[str, Any]]:
        if self.valid is None or not len(self.valid):
            return []
        rows = list(range(len(self.valid)))[: micro_batch_size * n]
        return [self.valid.batch(rows[i : i + micro_batch_size], self.seq_length)
                for i in range(0, len(rows), micro_batch_size)]

    def final_report(self, model: Any, log: Callable[[str], None]) -> dict[str, Any]:
        return {}


class RLSmokeTask:
    """CPU smoke fallback, NOT RL: teacher forcing on the answer tokens, greedy-decoding accuracy on validation."""

    name = "rl-smoke"

    def __init__(self, data_path: str, s: Settings, tokenizer_spec: str | None) -> None:
        from nemotron.data_prep.tokenizer import load_tokenizer

        if not tokenizer_spec:
            raise ConfigError("the RL fallback needs a tokenizer", key="fallback.tokenizer",
                              hint="set fallback.tokenizer to a dir with tokenizer.json "
                                   "(e.g. pkg:nemotron/recipes/nano3/sample_data/tokenizer)")
        info = load_tokenizer(str(tokenizer_spec))
        self.tok = info.load()
        self.eos = info.eod_id()
        self.pad = info.token_id("<|pad|>")
        self.pad = self.eos if self.pad is None else self.pad
        self.vocab_size = info.vocab_size
        self.seq_length = int(s.seq_length or 64)
        self.seed = s.seed
        self.max_new_tokens = int(s.extra.get("max_new_tokens", 16))
        self.eval_samples = int(s.extra.get("eval_samples", 32))
        self.train_recs = load_rl_split(data_path, "train")
        if not self.train_recs:
            raise ConfigError(f"no usable prompt/answer records in {data_path}", key="data.train_data_path")
        self.valid_recs = load_rl_split(data_path, "validation")
        self._train = [self._encode(r) for r in self.train_recs]
        self._valid = [self._encode(r) for r in self.valid_recs]

    def prompt_ids(self, prompt: str) -> list[int]:
        """Tokens of the prompt as the model sees it (``prompt + "\\n"``)."""
        return self.tok.encode(prompt + "\n", add_special_tokens=False).ids

    def _encode(self, rec: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        p = self.prompt_ids(rec["prompt"])
        a = [*self.tok.encode(str(rec["answer"]), add_special_tokens=False).ids, self.eos]
        room = self.seq_length + 1
        a = a[:room]
        p = p[-(room - len(a)):] if room > len(a) else []
        ids = np.full(room, self.pad, dtype=np.int64)
        mask = np.zeros(room, dtype=np.int64)
        ids[: len(p) + len(a)] = p + a
        mask[len(p) : len(p) + len(a)] = 1
        return ids, mask

    @staticmethod
    def _stack(items: list[tuple[np.ndarray, np.ndarray]]) -> dict[str, Any]:
        ids = np.stack([i for i, _ in items])
        mask = np.stack([m for _, m in items])
        return {"tokens": ids[:, :-1], "targets": ids[:, 1:], "loss_mask": mask[:, 1:]}

    def train_batch(self, indices: list[int]) -> dict[str, Any]:
        return self._stack([self._train[_shuffled_row(self.seed, i, len(self._train))] for i in indices])

    def eval_batches(self, micro_batch_size: int, n: int) -> list[dict[str, Any]]:
        items = self._valid[: micro_batch_size * n]
        return [self._stack(items[i : i + micro_batch_size]) for i in range(0, len(items), micro_batch_size)]

    def final_report(self, model: Any, log: Callable[[str], None]) -> dict[str, Any]:
        import torch

        recs = self.valid_recs[: self.eval_samples]
        if not recs:
            log(f"[{self.name}] no validation records: accuracy not measured")
            return {}
        device = next(model.parameters()).device
        model.eval()
        correct = 0
        for r in recs:
            p = self.prompt_ids(r["prompt"])[-(self.seq_length - 1):]
            out = model.generate(torch.tensor([p], device=device), self.max_new_tokens, stop_id=self.eos)
            correct += self.tok.decode(out).strip() == str(r["answer"]).strip()
        model.train()
        acc = correct / len(recs)
        log(f"[{self.name}] validation accuracy {correct}/{len(recs)} = {acc:.1%} "
            "(greedy decoding; CPU smoke fallback, not RL)")
        return {"accuracy": acc}
