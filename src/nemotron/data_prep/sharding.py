"""Cut scanned inputs into shards and assign records to train/valid/test splits.

Shards depend only on the inputs, ``num_shards`` and ``sample`` - never on the
number of workers - so the output is identical however many workers run it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

from nemo_runspec.errors import ConfigError

from .sources import CHECKPOINT_STRIDE, InputFile, Segment

SPLIT_NAMES = ("train", "valid", "test")
#: The RL data prep's splits (NeMo-RL reads train.jsonl and validation.jsonl).
RL_SPLITS = ("train", "validation")


@dataclass(frozen=True)
class Shard:
    """One unit of work: an index and the record ranges it covers."""

    index: int
    segments: tuple[Segment, ...]

    @property
    def num_records(self) -> int:
        """Number of input records (lines/rows) in the shard."""
        return sum(s.stop - s.start for s in self.segments)

    @property
    def name(self) -> str:
        """File-name stem, e.g. ``shard_00003``."""
        return f"shard_{self.index:05d}"

    def fingerprint(self, params: dict[str, Any]) -> str:
        """sha256 of the shard's inputs (url, range, size, content hash) and the processing parameters.

        Parameters whose name starts with ``_`` (bulky payloads such as the serialized
        tokenizer) are left out; put their fingerprint in a visible parameter instead.
        """
        visible = {k: v for k, v in params.items() if not k.startswith("_")}
        payload = {"segments": [asdict(s) for s in self.segments], "params": visible}
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def plan_shards(files: list[InputFile], num_shards: int, sample: int | None = None) -> list[Shard]:
    """Split the concatenated records of ``files`` into ``num_shards`` contiguous, near-equal shards.

    ``sample`` keeps only the first N records. Empty shards are dropped, so fewer
    records than ``num_shards`` gives one shard per record.
    """
    if num_shards < 1:
        raise ConfigError(f"num_shards must be >= 1, got {num_shards}", key="num_shards")
    total = sum(f.num_records for f in files)
    if sample is not None:
        if sample < 1:
            raise ConfigError(f"sample must be a positive number of records, got {sample}", key="sample")
        total = min(total, int(sample))
    bounds = [total * i // num_shards for i in range(num_shards + 1)]
    starts = []
    acc = 0
    for f in files:
        starts.append(acc)
        acc += f.num_records
    shards = []
    for i in range(num_shards):
        lo, hi = bounds[i], bounds[i + 1]
        if hi <= lo:
            continue
        segs = []
        for f, fstart in zip(files, starts, strict=True):
            a, b = max(lo, fstart), min(hi, fstart + f.num_records)
            if a >= b:
                continue
            start, stop = a - fstart, b - fstart
            ck = min(start // CHECKPOINT_STRIDE, len(f.checkpoints) - 1) if f.checkpoints else 0
            segs.append(
                Segment(
                    url=f.url,
                    fmt=f.fmt,
                    start=start,
                    stop=stop,
                    byte_offset=f.checkpoints[ck] if f.checkpoints else 0,
                    skip_from=ck * CHECKPOINT_STRIDE if f.checkpoints else 0,
                    size=f.size,
                    digest=f.digest or f.mtime,
                )
            )
        shards.append(Shard(index=len(shards), segments=tuple(segs)))
    return shards


def parse_split(spec: str | list | tuple, names: tuple[str, ...] = SPLIT_NAMES) -> dict[str, float]:
    """Parse ``"98,1,1"`` (or a list) into normalised fractions per split name."""
    parts = spec if isinstance(spec, list | tuple) else str(spec).replace("/", ",").split(",")
    try:
        weights = [float(p) for p in parts]
    except ValueError:
        raise ConfigError(f"split {spec!r} is not a list of numbers", key="split", hint='e.g. split: "98,1,1"') from None
    if len(weights) > len(names) or any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ConfigError(
            f"split {spec!r} needs 1-{len(names)} non-negative weights with a positive sum",
            key="split",
            hint=f"weights are for {', '.join(names)}",
        )
    weights += [0.0] * (len(names) - len(weights))
    total = sum(weights)
    return {n: w / total for n, w in zip(names, weights, strict=True)}


def hash_unit(key: str | bytes, seed: int | str = 0) -> float:
    """Deterministic uniform number in [0, 1) from a key and a seed."""
    if isinstance(key, str):
        key = key.encode("utf-8", "surrogatepass")
    h = hashlib.blake2b(key, digest_size=8, key=str(seed).encode()[:64])
    return int.from_bytes(h.digest(), "big") / 2**64


def assign_split(key: str | bytes, fractions: dict[str, float], seed: int | str = 0) -> str:
    """Pick a split for a record from the hash of its key (content), so duplicates share a split."""
    u = hash_unit(key, seed)
    acc = 0.0
    last = None
    for name, frac in fractions.items():
        if frac <= 0:
            continue
        acc += frac
        last = name
        if u < acc:
            return name
    assert last is not None
    return last
