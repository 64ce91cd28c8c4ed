"""The two tasks the CPU fallback evaluates (``evaluation.tasks`` of ``nano3/eval -c tiny``).

- ``heldout_perplexity``: mean next-token cross-entropy (nats/token) and its ``exp``
  over every token of a split of the pretrain data prep's ``blend.json``.
- ``answer_exact_match``: greedy answers to the prompts of a split of the RL data
  prep, scored by exact match, with teacher-forced answer loss and token accuracy.

How each is computed is described in :mod:`nemotron.training.evaluate`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from nemo_runspec.errors import ConfigError


def heldout_perplexity(model: Any, data_path: str, *, split: str = "test", batch_size: int = 16,
                       **_: Any) -> dict[str, Any]:
    """Next-token loss over every token of ``split`` of the pretrain data at ``data_path``."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    from .data import IndexedBin, load_blend

    blend = load_blend(data_path)
    entries = blend.get(split) or []
    if not entries:
        raise ConfigError(f"blend.json under {data_path} has no {split!r} split (it has "
                          + ", ".join(k for k, v in blend.items() if v) + ")",
                          key="evaluation.tasks", hint="pick another split: split=valid")
    ctx = int(model.cfg.seq_length)
    vocab = int(model.cfg.vocab_size)
    device = next(model.parameters()).device
    windows: dict[int, list[np.ndarray]] = {}
    for _, prefix in entries:
        tokens = IndexedBin(prefix).tokens
        if tokens.size and int(tokens.max()) >= vocab:
            raise ConfigError(f"{prefix} has token id {int(tokens.max())}, beyond the model's vocabulary "
                              f"of {vocab}", key="fallback.data_path",
                              hint="evaluate on data tokenized with the model's tokenizer")
        for start in range(0, max(0, tokens.size - 1), ctx):
            w = np.asarray(tokens[start:start + ctx + 1], dtype=np.int64)
            if w.size >= 2:
                windows.setdefault(w.size, []).append(w)
    total, count = 0.0, 0
    with torch.no_grad():
        for size in sorted(windows):
            group = windows[size]
            for i in range(0, len(group), batch_size):
                batch = torch.as_tensor(np.stack(group[i:i + batch_size]), device=device)
                logits = model(batch[:, :-1])
                ce = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), batch[:, 1:].reshape(-1),
                                     reduction="sum")
                total += float(ce)
                count += int(batch[:, 1:].numel())
    if not count:
        raise ConfigError(f"the {split!r} split under {data_path} holds no tokens to predict",
                          key="evaluation.tasks")
    loss = total / count
    return {"split": split, "data": str(data_path), "datasets": len(entries), "tokens": count,
            "loss": loss, "perplexity": math.exp(loss)}


def answer_exact_match(model: Any, data_path: str, *, tokenizer: str | None, split: str = "validation",
                       max_new_tokens: int = 16, samples: int | None = None, **_: Any) -> dict[str, Any]:
    """Greedy answers to the prompts of ``split`` of the RL data at ``data_path``, scored by exact match."""
    import torch
    import torch.nn.functional as F

    from nemotron.data_prep.tokenizer import load_tokenizer

    from .data import load_rl_split

    if not tokenizer:
        raise ConfigError("answer_exact_match needs a tokenizer", key="fallback.tokenizer",
                          hint="a dir with tokenizer.json, e.g. pkg:nemotron/recipes/nano3/sample_data/tokenizer")
    info = load_tokenizer(str(tokenizer))
    tok = info.load()
    eos = info.eod_id()
    vocab = int(model.cfg.vocab_size)
    if info.vocab_size > vocab:
        raise ConfigError(f"tokenizer {tokenizer} has {info.vocab_size} tokens, the model {vocab}",
                          key="fallback.tokenizer", hint="use the tokenizer the model was trained with")
    records = load_rl_split(data_path, split)
    if samples:
        records = records[: int(samples)]
    if not records:
        raise ConfigError(f"no prompt/answer records in {data_path}/{split}.jsonl", key="fallback.task_data_path")
    ctx = int(model.cfg.seq_length)
    device = next(model.parameters()).device
    correct, answer_ce, answer_hits, answer_tokens = 0, 0.0, 0, 0
    with torch.no_grad():
        for rec in records:
            prompt = tok.encode(str(rec["prompt"]) + "\n", add_special_tokens=False).ids
            answer = [*tok.encode(str(rec["answer"]), add_special_tokens=False).ids, eos]
            out = model.generate(torch.tensor([prompt[-(ctx - 1):]], device=device), int(max_new_tokens),
                                 stop_id=eos)
            correct += tok.decode(out).strip() == str(rec["answer"]).strip()
            ids = (prompt + answer)[-(ctx + 1):]
            n_ans = min(len(answer), len(ids) - 1)
            seq = torch.tensor([ids], device=device)
            logits = model(seq[:, :-1])[0, -n_ans:]
            target = seq[0, -n_ans:]
            answer_ce += float(F.cross_entropy(logits.float(), target, reduction="sum"))
            answer_hits += int((logits.argmax(-1) == target).sum())
            answer_tokens += n_ans
    n = len(records)
    return {"split": split, "data": str(data_path), "samples": n, "correct": correct,
            "exact_match": correct / n, "answer_loss": answer_ce / answer_tokens,
            "answer_token_accuracy": answer_hits / answer_tokens, "max_new_tokens": int(max_new_tokens)}


TASK_FUNCTIONS: dict[str, Callable[..., dict[str, Any]]] = {
    "heldout_perplexity": heldout_perplexity,
    "answer_exact_match": answer_exact_match,
}
#: The flat metric names of each task (in results.json ``metrics`` and the summary line).
METRICS = {
    "heldout_perplexity": {"perplexity": "perplexity", "heldout_loss": "loss"},
    "answer_exact_match": {"exact_match": "exact_match", "answer_token_accuracy": "answer_token_accuracy",
                           "answer_loss": "answer_loss"},
}
