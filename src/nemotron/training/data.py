"""Readers for the nano3 data-prep outputs, without megatron-core.

- Pretrain: Megatron ``MMIDIDX`` v1 ``.bin``/``.idx`` pairs (numpy memmap) and
  ``blend.json`` (``{"train": [weight, prefix, ...], "valid": ..., "test": ...}``).
  Training samples are fixed-length windows at random offsets of the token
  stream, the dataset picked in proportion to the blend weights.
- SFT: the Megatron-Bridge packed files ``packed/<split>.npy`` (``np.save`` of dicts
  ``{input_ids, loss_mask, seq_start_id}``, label-aligned loss mask), read with
  ``np.load(..., allow_pickle=True)`` as Megatron-Bridge's finetune reads them.
- RL: JSONL ``{id, messages, prompt, answer}`` in ``train.jsonl`` / ``validation.jsonl``.

Sample ``i`` of a run is a pure function of ``(seed, i)``, so every rank reads
its own disjoint slice (``i = (step * world + rank) * batch + j``) and a resumed
run sees the same data as an uninterrupted one.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nemo_runspec.errors import ConfigError

INDEX_HEADER = b"MMIDIDX\x00\x00"
DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float32, 8: np.uint16}


class IndexedBin:
    """Read-only view of one Megatron indexed dataset ``<prefix>.bin`` / ``<prefix>.idx``.

    ``ds[i]`` is document ``i`` as a numpy array; :attr:`tokens` is the whole
    ``.bin`` as one flat memmapped token stream.
    """

    def __init__(self, prefix: str | os.PathLike[str]) -> None:
        self.prefix = str(prefix)
        idx_path, bin_path = Path(self.prefix + ".idx"), Path(self.prefix + ".bin")
        for p in (idx_path, bin_path):
            if not p.is_file():
                raise ConfigError(f"indexed dataset file {p} not found", path=str(p),
                                  hint="rerun the pretrain data prep or fix the paths in blend.json")
        with open(idx_path, "rb") as f:
            if f.read(9) != INDEX_HEADER:
                raise ConfigError("not a Megatron MMIDIDX index file", path=str(idx_path))
            (version,) = struct.unpack("<Q", f.read(8))
            if version != 1:
                raise ConfigError(f"unsupported index version {version}", path=str(idx_path))
            (code,) = struct.unpack("<B", f.read(1))
            (n_seq,) = struct.unpack("<Q", f.read(8))
            (n_doc,) = struct.unpack("<Q", f.read(8))
            offset = f.tell()
        if code not in DTYPES:
            raise ConfigError(f"unknown dtype code {code}", path=str(idx_path))
        self.dtype = np.dtype(DTYPES[code])
        idx = np.memmap(idx_path, mode="r", dtype=np.uint8)
        self.sequence_lengths = np.frombuffer(idx, dtype=np.int32, count=n_seq, offset=offset)
        offset += self.sequence_lengths.nbytes
        self.sequence_pointers = np.frombuffer(idx, dtype=np.int64, count=n_seq, offset=offset)
        offset += self.sequence_pointers.nbytes
        self.document_indices = np.frombuffer(idx, dtype=np.int64, count=n_doc, offset=offset)
        size = bin_path.stat().st_size
        self.tokens = np.memmap(bin_path, mode="r", dtype=self.dtype) if size else np.zeros(0, self.dtype)

    def __len__(self) -> int:
        return len(self.sequence_lengths)

    def __getitem__(self, i: int) -> np.ndarray:
        start = int(self.sequence_pointers[i]) // self.dtype.itemsize
        return np.asarray(self.tokens[start : start + int(self.sequence_lengths[i])])

    @property
    def num_tokens(self) -> int:
        """Tokens in the ``.bin`` file."""
        return int(self.tokens.size)


def load_blend(data_path: str | os.PathLike[str]) -> dict[str, list[tuple[float, str]]]:
    """``{split: [(weight, prefix), ...]}`` from ``blend.json`` (a file, or a directory holding one)."""
    p = Path(data_path)
    blend_file = p / "blend.json" if p.is_dir() else p
    if not blend_file.is_file():
        raise ConfigError(f"no blend.json at {blend_file}", key="data.data_path",
                          hint="point data.data_path at the pretrain data-prep output (run `nemotron nano3 data prep pretrain`)")
    try:
        raw = json.loads(blend_file.read_text())
    except ValueError as exc:
        raise ConfigError(f"blend.json is not valid JSON: {exc}", path=str(blend_file)) from None
    out: dict[str, list[tuple[float, str]]] = {}
    for split, flat in raw.items():
        if not flat:
            out[split] = []
            continue
        if len(flat) % 2:
            raise ConfigError(f"split {split!r} is not a [weight, prefix, ...] list", path=str(blend_file))
        out[split] = [(float(flat[i]), str(flat[i + 1])) for i in range(0, len(flat), 2)]
    return out


class PretrainWindows:
    """Fixed-length next-token windows sampled from a weighted blend of indexed datasets."""

    def __init__(self, entries: list[tuple[float, str]], seq_length: int, seed: int) -> None:
        self.datasets = [IndexedBin(prefix) for _, prefix in entries]
        usable = [(w, d) for (w, _), d in zip(entries, self.datasets, strict=True) if d.num_tokens > seq_length]
        if not usable:
            raise ConfigError(f"no dataset in the blend has more than seq_length={seq_length} tokens",
                              key="fallback.seq_length", hint="lower fallback.seq_length or prepare more data")
        weights = np.array([w for w, _ in usable], dtype=np.float64)
        self.weights = weights / weights.sum()
        self.usable = [d for _, d in usable]
        self.seq_length = seq_length
        self.seed = seed

    @property
    def max_token_id(self) -> int:
        """Largest token id in any dataset of the blend."""
        return max(int(d.tokens.max()) for d in self.datasets if d.num_tokens)

    def sample(self, i: int) -> np.ndarray:
        """Window ``i``: ``seq_length + 1`` tokens (inputs plus the shifted targets)."""
        rng = np.random.default_rng([self.seed, i])
        d = self.usable[int(rng.choice(len(self.usable), p=self.weights))]
        start = int(rng.integers(0, d.num_tokens - self.seq_length))
        return np.asarray(d.tokens[start : start + self.seq_length + 1], dtype=np.int64)

    def batch(self, indices: list[int]) -> dict[str, Any]:
        """``{"tokens", "targets"}`` int64 arrays ``[len(indices), seq_length]``."""
        windows = np.stack([self.sample(i) for i in indices])
        return {"tokens": windows[:, :-1], "targets": windows[:, 1:]}


@dataclass
class Packs:
    """Packed SFT sequences of one split, as dense arrays padded to the pack size."""

    input_ids: np.ndarray  # [n, pack_size] int64
    loss_mask: np.ndarray  # [n, pack_size] int64, label-aligned: 1 at j trains the prediction of token j + 1
    segment_ids: np.ndarray  # [n, pack_size] int64; padding gets its own segment

    def __len__(self) -> int:
        return len(self.input_ids)

    def batch(self, rows: list[int], seq_length: int) -> dict[str, Any]:
        """Inputs/targets shifted by one, cropped to ``seq_length``; loss only where the input's
        (label-aligned) mask is 1 and input and target belong to the same conversation."""
        ids, mask, seg = self.input_ids[rows], self.loss_mask[rows], self.segment_ids[rows]
        n = min(seq_length, ids.shape[1] - 1)
        same = seg[:, 1 : n + 1] == seg[:, :n]
        return {"tokens": ids[:, :n], "targets": ids[:, 1 : n + 1],
                "loss_mask": mask[:, :n] * same, "segment_ids": seg[:, :n]}


def segment_ids_for(seq_start_ids: list[int], num_tokens: int, pack_size: int) -> np.ndarray:
    """Segment id per position: conversation ``k`` covers ``[start_k, start_{k+1})``; padding is one more segment."""
    seg = np.full(pack_size, len(seq_start_ids), dtype=np.int64)
    bounds = [*seq_start_ids, num_tokens]
    for k in range(len(seq_start_ids)):
        seg[bounds[k] : bounds[k + 1]] = k
    return seg


#: our split name -> the packed file the SFT data prep writes (``packed.files`` in metadata.json)
PACKED_DEFAULTS = {"train": "packed/train.npy", "valid": "packed/validation.npy", "test": "packed/test.npy"}


def load_packs(data_path: str | os.PathLike[str], split: str) -> Packs | None:
    """The packs of ``split`` from the SFT output's Megatron-Bridge file (None when it has none).

    The file is read like Megatron-Bridge reads it (``np.load(path, allow_pickle=True)``,
    ``seq_boundaries = seq_start_id + [len(input_ids)]``); each pack is padded to the
    data prep's ``pack_size`` with its ``pad_id``, loss mask 0.
    """
    root = Path(data_path)
    if not root.is_dir():
        raise ConfigError(f"SFT data dir {root} not found", key="data.data_path",
                          hint="point data.data_path at the SFT data-prep output (run `nemotron nano3 data prep sft`)")
    meta = read_metadata(root)
    rel = ((meta.get("packed") or {}).get("files") or {}).get(split) or PACKED_DEFAULTS[split]
    path = root / rel
    if not path.is_file():
        if split == "train":
            raise ConfigError(f"no packed SFT file {path}", key="data.data_path",
                              hint="rerun `nemotron nano3 data prep sft`: it writes packed/*.npy "
                                   "(the Megatron-Bridge layout) next to the Parquet shards")
        return None
    items = np.load(path, allow_pickle=True)
    if not len(items):
        return None
    longest = max(len(it["input_ids"]) for it in items)
    size = max(int(meta.get("pack_size") or 0), longest)
    ids = np.full((len(items), size), int(meta.get("pad_id") or 0), dtype=np.int64)
    mask = np.zeros((len(items), size), dtype=np.int64)
    segs = np.empty((len(items), size), dtype=np.int64)
    for i, it in enumerate(items):
        tokens = it["input_ids"]
        bounds = it["seq_start_id"] + [len(tokens)]  # a list, as Megatron-Bridge builds seq_boundaries
        if len(it["loss_mask"]) != len(tokens) or bounds[0] != 0 or sorted(bounds) != bounds:
            raise ConfigError(f"pack {i} of {path} is malformed (loss_mask/seq_start_id do not match input_ids)",
                              path=str(path), hint="rerun the SFT data prep")
        ids[i, : len(tokens)] = tokens
        mask[i, : len(tokens)] = it["loss_mask"]
        segs[i] = segment_ids_for(bounds[:-1], len(tokens), size)
    return Packs(ids, mask, segs)


def read_metadata(data_path: str | os.PathLike[str]) -> dict[str, Any]:
    """``metadata.json`` of a data-prep output dir ({} when absent)."""
    p = Path(data_path)
    meta = (p if p.is_dir() else p.parent) / "metadata.json"
    return json.loads(meta.read_text()) if meta.is_file() else {}


def load_rl_split(data_path: str | os.PathLike[str], split: str) -> list[dict[str, Any]]:
    """Records of ``<split>.jsonl`` next to / inside ``data_path`` (a dir or the train JSONL file)."""
    p = Path(data_path)
    root = p if p.is_dir() else p.parent
    f = root / f"{split}.jsonl"
    if not f.is_file():
        if split == "train":
            raise ConfigError(f"RL data {f} not found", key="data.train_data_path",
                              hint="point data.train_data_path at the RL data-prep output (run `nemotron nano3 data prep rl`)")
        return []
    out = []
    with open(f, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                raise ConfigError("invalid JSON line", path=str(f), line=n) from None
            if rec.get("answer") is None or not rec.get("prompt"):
                continue
            out.append(rec)
    return out
