"""A tiny decoder-only GPT and its losses (plain PyTorch).

Attention is causal and, when ``segment_ids`` are given, block-diagonal: a token
attends only to earlier tokens of the same segment (one segment per packed
conversation). Position ids restart at every segment start.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class GPTConfig:
    """Model shape: ``vocab_size`` comes from the data, the rest from ``fallback.model``."""

    vocab_size: int
    seq_length: int = 64
    n_layer: int = 2
    n_head: int = 2
    d_model: int = 64
    dropout: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (stored in checkpoints)."""
        return asdict(self)


class _Block(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.n_head = cfg.n_head
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(), nn.Linear(4 * cfg.d_model, cfg.d_model))
        self.dropout = cfg.dropout

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=self.dropout if self.training else 0.0)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


def attention_mask(segment_ids: torch.Tensor | None, t: int, device: torch.device) -> torch.Tensor:
    """Boolean ``[b|1, 1, t, t]`` mask: causal, and block-diagonal over ``segment_ids`` when given."""
    causal = torch.ones(t, t, dtype=torch.bool, device=device).tril()
    if segment_ids is None:
        return causal.view(1, 1, t, t)
    same = segment_ids[:, :, None] == segment_ids[:, None, :]
    return (same & causal).unsqueeze(1)


def position_ids(segment_ids: torch.Tensor | None, b: int, t: int, device: torch.device) -> torch.Tensor:
    """Positions ``0..t-1``, restarting at 0 at each segment start when ``segment_ids`` are given."""
    pos = torch.arange(t, device=device).expand(b, t)
    if segment_ids is None:
        return pos
    starts = torch.ones_like(segment_ids, dtype=torch.bool)
    starts[:, 1:] = segment_ids[:, 1:] != segment_ids[:, :-1]
    start_pos = torch.where(starts, pos, torch.zeros_like(pos)).cummax(dim=1).values
    return pos - start_pos


class TinyGPT(nn.Module):
    """Pre-LayerNorm GPT with learned positions and tied input/output embeddings."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        if cfg.d_model % cfg.n_head:
            raise ValueError(f"d_model {cfg.d_model} is not divisible by n_head {cfg.n_head}")
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.seq_length, cfg.d_model)
        self.blocks = nn.ModuleList(_Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("proj.weight") or name.endswith("mlp.2.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=0.02)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=0.02)

    def forward(self, idx: torch.Tensor, segment_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``[b, t, vocab]`` for token ids ``[b, t]`` (``t <= seq_length``)."""
        b, t = idx.shape
        if t > self.cfg.seq_length:
            raise ValueError(f"sequence of {t} tokens is longer than seq_length {self.cfg.seq_length}")
        x = self.tok(idx) + self.pos(position_ids(segment_ids, b, t, idx.device))
        mask = attention_mask(segment_ids, t, idx.device)
        for block in self.blocks:
            x = block(x, mask)
        return self.ln_f(x) @ self.tok.weight.T

    @torch.no_grad()
    def generate(self, idx: torch.Tensor, max_new_tokens: int, stop_id: int | None = None) -> list[int]:
        """Greedy decoding of one prompt ``[1, t]``; returns the new token ids (without ``stop_id``)."""
        out: list[int] = []
        for _ in range(max_new_tokens):
            ctx = idx[:, -self.cfg.seq_length :]
            nxt = int(self(ctx)[0, -1].argmax())
            if nxt == stop_id:
                break
            out.append(nxt)
            idx = torch.cat([idx, torch.tensor([[nxt]], device=idx.device)], dim=1)
        return out


def masked_lm_loss(logits: torch.Tensor, targets: torch.Tensor, loss_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Mean next-token cross-entropy over positions where ``loss_mask == 1`` (all positions without a mask).

    ``logits[b, i]`` predicts ``targets[b, i]``. Returns 0 (with a gradient) when the mask is empty.
    """
    ce = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), targets.reshape(-1), reduction="none")
    if loss_mask is None:
        return ce.mean()
    m = loss_mask.reshape(-1).to(ce.dtype)
    return (ce * m).sum() / m.sum().clamp(min=1.0)
