"""Read records from JSONL / Parquet files (local paths, globs, any fsspec URL) or HF datasets.

Inputs are first *scanned* (record counts plus seek checkpoints), then cut into
contiguous :class:`Segment` ranges by :mod:`nemotron.data_prep.sharding`; a Ray
task reads only its segments with :func:`iter_segment`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from nemo_runspec.errors import ConfigError

from .paths import is_url, resolve_path

#: A seek checkpoint (byte offset) is kept every this many JSONL lines.
CHECKPOINT_STRIDE = 1024
HF_PREFIX = "hf:"


@dataclass(frozen=True)
class InputFile:
    """A scanned input: its record count and what identifies its content."""

    url: str
    fmt: str  # "jsonl" | "parquet" | "hf"
    num_records: int
    size: int
    mtime: str
    checkpoints: tuple[int, ...] = ()  # byte offset of line k*CHECKPOINT_STRIDE (jsonl)


@dataclass(frozen=True)
class Segment:
    """Records ``[start, stop)`` (0-based) of one input file."""

    url: str
    fmt: str
    start: int
    stop: int
    byte_offset: int  # jsonl: offset of checkpoint line ``skip_from``
    skip_from: int  # first line index at ``byte_offset``
    size: int
    mtime: str


@dataclass(frozen=True)
class Bad:
    """Marks an unreadable record: where and why."""

    reason: str
    detail: str = ""


def detect_format(url: str, fmt: str = "auto") -> str:
    """Format of an input: the configured one, else from the file extension."""
    if fmt and fmt != "auto":
        if fmt not in ("jsonl", "parquet", "hf"):
            raise ConfigError(f"unknown input format {fmt!r}", key="input.format", hint="use jsonl, parquet or auto")
        return fmt
    if url.startswith(HF_PREFIX):
        return "hf"
    name = url.lower()
    for ext in (".gz", ".zst", ".bz2", ".xz"):
        name = name.removesuffix(ext)
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    raise ConfigError(f"cannot tell the format of {url}", key="input.format", hint="set input.format: jsonl or parquet")


def expand_inputs(paths: list[str] | str, base: str | None = None) -> list[str]:
    """Expand configured input paths/globs/URLs into a sorted, de-duplicated list of files.

    Each pattern's matches are sorted; patterns keep their configured order.
    """
    import fsspec

    if isinstance(paths, str):
        paths = [paths]
    if not paths:
        raise ConfigError("no input paths configured", key="input.paths")
    out: list[str] = []
    for raw in paths:
        raw = str(raw)
        if raw.startswith(HF_PREFIX):
            out.append(raw)
            continue
        resolved = resolve_path(raw, base)
        fs, _, _ = fsspec.get_fs_token_paths(resolved)
        if any(ch in resolved for ch in "*?["):
            matches = sorted(fs.glob(resolved))
        elif fs.isdir(resolved):
            matches = sorted(p for p in fs.find(resolved) if _looks_like_data(p))
        else:
            matches = [resolved] if fs.exists(resolved) else []
        if not matches:
            raise ConfigError(f"input {raw!r} matched no files (resolved to {resolved})", key="input.paths")
        proto = fs.protocol[0] if isinstance(fs.protocol, tuple | list) else fs.protocol
        for m in matches:
            url = m if (not is_url(resolved) or "://" in m) else f"{proto}://{m}"
            if url not in out:
                out.append(url)
    return out


def _looks_like_data(path: str) -> bool:
    try:
        detect_format(path)
        return True
    except ConfigError:
        return False


def scan_input(url: str, fmt: str = "auto") -> InputFile:
    """Count the records of one input and record JSONL seek checkpoints."""
    import fsspec

    fmt = detect_format(url, fmt)
    if fmt == "hf":
        ds = _load_hf(url)
        return InputFile(url=url, fmt="hf", num_records=len(ds), size=0, mtime=str(getattr(ds, "_fingerprint", "")))
    fs, _, (path,) = fsspec.get_fs_token_paths(url)
    info = fs.info(path)
    size = int(info.get("size") or 0)
    mtime = str(info.get("mtime") or info.get("LastModified") or info.get("created") or info.get("ETag") or "")
    if fmt == "parquet":
        import pyarrow.parquet as pq

        with fsspec.open(url, "rb") as f:
            n = pq.ParquetFile(f).metadata.num_rows
        return InputFile(url=url, fmt=fmt, num_records=n, size=size, mtime=mtime)
    checkpoints = [0]
    n = 0
    offset = 0
    with fsspec.open(url, "rb", compression="infer") as f:
        for line in f:
            n += 1
            offset += len(line)
            if n % CHECKPOINT_STRIDE == 0:
                checkpoints.append(offset)
    return InputFile(url=url, fmt=fmt, num_records=n, size=size, mtime=mtime, checkpoints=tuple(checkpoints))


def iter_segment(seg: Segment) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_or_row_number_1_based, record_dict | Bad | None)`` for a segment.

    ``None`` marks a blank JSONL line (not a record, counted separately).
    """
    if seg.fmt == "jsonl":
        yield from _iter_jsonl(seg)
    elif seg.fmt == "parquet":
        yield from _iter_parquet(seg)
    else:
        ds = _load_hf(seg.url)
        for i in range(seg.start, seg.stop):
            yield i + 1, dict(ds[i])


def _iter_jsonl(seg: Segment) -> Iterator[tuple[int, Any]]:
    import fsspec

    with fsspec.open(seg.url, "rb", compression="infer") as f:
        f.seek(seg.byte_offset)
        idx = seg.skip_from
        for line in f:
            if idx >= seg.stop:
                break
            if idx >= seg.start:
                yield idx + 1, parse_json_line(line)
            idx += 1


def parse_json_line(line: bytes) -> Any:
    """Parse one JSONL line into a dict, ``Bad`` or ``None`` (blank line)."""
    if not line.strip():
        return None
    try:
        obj = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return Bad("invalid_json", str(exc)[:120])
    if not isinstance(obj, dict):
        return Bad("not_an_object", f"got {type(obj).__name__}")
    return obj


def _iter_parquet(seg: Segment) -> Iterator[tuple[int, Any]]:
    import fsspec
    import pyarrow.parquet as pq

    with fsspec.open(seg.url, "rb") as f:
        pf = pq.ParquetFile(f)
        row = 0
        for batch in pf.iter_batches(batch_size=1024):
            n = batch.num_rows
            if row + n <= seg.start:
                row += n
                continue
            for i, rec in enumerate(batch.to_pylist()):
                r = row + i
                if seg.start <= r < seg.stop:
                    yield r + 1, rec
            row += n
            if row >= seg.stop:
                break


def _load_hf(url: str) -> Any:  # pragma: no cover - needs network and the `datasets` package
    """Load ``hf:org/name[:config][@split]`` with the ``datasets`` package (online only)."""
    try:
        import datasets
    except ImportError as exc:
        raise ConfigError(
            f"input {url!r} needs the `datasets` package", hint="pip install datasets, or use local/fsspec paths"
        ) from exc
    spec = url[len(HF_PREFIX) :]
    spec, _, split = spec.partition("@")
    name, _, config = spec.partition(":")
    return datasets.load_dataset(name, config or None, split=split or "train")
