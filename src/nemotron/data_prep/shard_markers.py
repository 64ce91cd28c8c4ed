"""A shard's done-marker: ``<out_dir>/.done/<shard>.json``, the fingerprint and result of a
finished shard, written by :func:`run_shard` (what every way of running shards executes per
shard) and read back by :func:`load_done` so that a rerun skips it. :mod:`nemotron.data_prep.runner`
runs shards with them (and re-exports these names)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from .report import write_json
from .sharding import Shard

ShardFn = Callable[[Shard, dict, str], dict]
DONE_DIR = ".done"


def marker_path(out_dir: str | Path, shard: Shard) -> Path:
    """Where the done-marker of ``shard`` lives."""
    return Path(out_dir) / DONE_DIR / f"{shard.name}.json"


def load_done(out_dir: str | Path, shard: Shard, fingerprint: str) -> dict | None:
    """The stored result of a finished shard whose fingerprint matches and outputs exist, else None."""
    path = marker_path(out_dir, shard)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("fingerprint") != fingerprint:
        return None
    result = data.get("result") or {}
    if not all((Path(out_dir) / o).exists() for o in result.get("outputs", [])):
        return None
    return result


def run_shard(fn: ShardFn, shard: Shard, params: dict, out_dir: str, fingerprint: str) -> dict:
    """Run ``fn`` on one shard and write its done-marker (this is what each Ray task executes)."""
    t0 = time.perf_counter()
    result = fn(shard, params, out_dir)
    result["seconds"] = round(time.perf_counter() - t0, 3)
    marker = marker_path(out_dir, shard)
    marker.parent.mkdir(parents=True, exist_ok=True)
    write_json(marker, {"fingerprint": fingerprint, "shard": shard.index, "result": result})
    return result
