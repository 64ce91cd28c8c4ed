"""Shared plumbing for the three data-prep kinds: config access, planning, finishing."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .paths import resolve_path
from .report import check_bad_fraction, format_bad_summary, merge_bad, write_json
from .sharding import Shard, plan_shards
from .sources import InputFile, expand_inputs, scan_input

if TYPE_CHECKING:
    from .schema import DataPrepSettings


def to_dict(cfg: Any) -> dict[str, Any]:
    """A plain, resolved dict from a DictConfig or mapping (the ``run:`` section dropped)."""
    try:
        from omegaconf import DictConfig, OmegaConf

        if isinstance(cfg, DictConfig):
            cfg = OmegaConf.to_container(cfg, resolve=True)
    except ImportError:  # pragma: no cover
        pass
    data = json.loads(json.dumps(dict(cfg), default=str))
    data.pop("run", None)
    return data


def config_hash(cfg: Mapping[str, Any]) -> str:
    """sha256 of the config minus keys that do not change the content (workers, publish, output location)."""
    relevant = {k: v for k, v in cfg.items() if k not in ("workers", "publish", "run", "output_dir", "name")}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True, default=str).encode()).hexdigest()


def default_output_dir(name: str, key: str | None = None) -> str:
    """``$NEMOTRON_HOME/data/<name>[/<key>]`` (``NEMOTRON_HOME`` defaults to ``~/.nemotron``)."""
    from nemo_runspec.paths import nemotron_home

    home = str(nemotron_home())
    return os.path.join(home, "data", name, key) if key else os.path.join(home, "data", name)


def content_key(cfg: Mapping[str, Any], files: list[Any]) -> str:
    """12 hex digits naming what the output will contain: the config and the inputs.

    The default output dir carries it, so a published version's path is never
    overwritten by a run with another config or changed inputs (the same key
    means the same, byte-identical output, so re-running into it is harmless).
    """
    inputs = sorted((_content_id(f)) for f in files)
    blob = json.dumps([config_hash(_without_locations(cfg)), inputs], sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


def _content_id(f: Any) -> tuple[str, int, int, str]:
    """What a file holds, not where it is: name, size, records and a hash of its head.

    A packaged job sees the same inputs under another path (``<job dir>/code/...``);
    keying on the path would give identical data a new directory and version.
    """
    head = ""
    try:
        import fsspec

        with fsspec.open(f.url, "rb") as fh:
            head = hashlib.sha256(fh.read(1 << 20)).hexdigest()[:16]
    except (OSError, ValueError):  # e.g. a hub dataset id: no file to read
        head = str(f.mtime)
    return (str(f.url).rstrip("/").rsplit("/", 1)[-1], int(f.size), int(f.num_records), head)


def _without_locations(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The config minus where the inputs live (their content is keyed instead).

    ``tokenizer.path`` stays: a ``pkg:`` or shared-filesystem path names the same
    tokenizer wherever the job runs.
    """
    c = dict(cfg)
    if isinstance(c.get("input"), Mapping):
        c["input"] = {k: v for k, v in c["input"].items() if k != "paths"}
    return c


@dataclass
class Plan:
    """Everything decided before any shard runs.

    ``cfg`` is the resolved config as written (what the content key hashes);
    ``settings`` the same config checked and typed by the stage's schema
    (:mod:`nemotron.data_prep.schema`), with the defaults of absent keys: the
    run code reads its settings from there.
    """

    kind: str
    cfg: dict[str, Any]
    settings: DataPrepSettings
    out_dir: Path
    files: list[InputFile]
    shards: list[Shard]
    workers: int | None
    t0: float = field(default_factory=time.perf_counter)


def make_plan(cfg: Mapping[str, Any], kind: str, default_name: str) -> Plan:
    """Check the config of stage ``kind`` against its schema, resolve paths, scan inputs and cut shards."""
    from .validation import settings_for

    s = settings_for(cfg, kind)
    c = to_dict(cfg)
    urls = expand_inputs(s.input.paths, s.data_root)
    files = [scan_input(u, s.input.format) for u in urls]
    out_dir = Path(resolve_path(s.output_dir or default_output_dir(s.name or default_name, content_key(c, files))))
    shards = plan_shards(files, s.num_shards, s.sample)
    out_dir.mkdir(parents=True, exist_ok=True)
    return Plan(kind=kind, cfg=c, settings=s, out_dir=out_dir, files=files, shards=shards, workers=s.workers)


def remove_stale(out_dir: Path, keep: set[str], patterns: tuple[str, ...]) -> list[str]:
    """Delete files matching ``patterns`` under ``out_dir`` that are not in ``keep`` (leftovers of older runs)."""
    removed = []
    for pat in patterns:
        for p in sorted(out_dir.glob(pat)):
            rel = p.relative_to(out_dir).as_posix()
            if rel not in keep and p.is_file():
                p.unlink()
                removed.append(rel)
    return removed


def finish(plan: Plan, results: list[dict], summary: dict[str, Any], *, stream: Any = None) -> dict[str, Any]:
    """Write report.json, print the summary, enforce ``max_bad_fraction`` and publish."""
    import sys

    stream = stream or sys.stdout
    records = sum(int(r.get("records", 0)) for r in results)
    bad = merge_bad([r.get("bad", {}) for r in results])
    report = {
        "kind": plan.kind,
        "records": records,
        "blank_lines": sum(int(r.get("blank_lines", 0)) for r in results),
        "bad": bad,
        "bad_fraction": round(bad["total"] / records, 6) if records else 0.0,
        "max_bad_fraction": plan.settings.max_bad_fraction,
        "shards": [
            {k: v for k, v in r.items() if k not in ("bad", "seconds", "outputs")} | {"shard": i}
            for i, r in enumerate(results)
        ],
    }
    report_path = plan.out_dir / "report.json"
    write_json(report_path, report)
    elapsed = time.perf_counter() - plan.t0
    summary = {**summary, "records": records, "bad_records": bad["total"], "output_dir": str(plan.out_dir)}
    tokens = int(summary.get("tokens", 0))
    print(f"[{plan.kind}] done in {elapsed:.1f}s: {records:,} records, {len(results)} shards"
          + (f", {tokens:,} tokens ({tokens / max(elapsed, 1e-9):,.0f} tok/s)" if tokens else ""), file=stream)
    for line in format_bad_summary(bad, records):
        print(f"[{plan.kind}] {line}", file=stream)
    print(f"[{plan.kind}] output: {plan.out_dir}  (report: {report_path})", file=stream, flush=True)
    check_bad_fraction(records, bad["total"], plan.settings.max_bad_fraction, report_path=report_path)
    from .publish import publish_output

    publish_output(plan.settings, plan.out_dir, summary)
    return summary
