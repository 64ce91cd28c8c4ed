"""Read records from JSONL / Parquet files (local paths, globs, any fsspec URL) or HF datasets.

Inputs are first *scanned* (record counts plus seek checkpoints, and the sha256
of the whole content, computed in the same read), then cut into contiguous
:class:`Segment` ranges by :mod:`nemotron.data_prep.sharding`; a Ray task reads
only its segments with :func:`iter_segment`.

Memory per record is bounded: a JSONL line is read at most ``max_record_bytes``
(+1) bytes at a time, and a longer one is skipped in 1 MiB pieces and counted as
a ``too_large`` bad record, never loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from nemo_runspec.errors import ConfigError

from .paths import is_url, resolve_path

#: A seek checkpoint (byte offset) is kept every this many JSONL lines.
CHECKPOINT_STRIDE = 1024
HF_PREFIX = "hf:"
#: Bytes read at a time while scanning (and while skipping an oversized line).
BLOCK = 1 << 20
#: Default of the ``max_record_bytes`` setting: a JSONL line (or Parquet row) over this is bad.
MAX_RECORD_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class InputFile:
    """A scanned input: its record count and what identifies its content."""

    url: str
    fmt: str  # "jsonl" | "parquet" | "hf"
    num_records: int
    size: int
    mtime: str
    checkpoints: tuple[int, ...] = ()  # byte offset of line k*CHECKPOINT_STRIDE (jsonl)
    digest: str = ""  # sha256 of the whole content (jsonl: decompressed; parquet: the file; hf: fingerprint)


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
    digest: str  # the file's content hash (InputFile.digest): a changed file is a changed segment


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
    """Count the records of one input, record JSONL seek checkpoints and hash its whole content.

    JSONL is read once, in 1 MiB blocks (memory does not depend on line length):
    the same read counts the lines, finds the checkpoints and feeds the sha256.
    Parquet's row count comes from its footer; its bytes are hashed in one read.
    An input that is not a regular file (a FIFO, a device) or cannot be read is a
    :class:`~nemo_runspec.errors.ConfigError` naming it.
    """
    import fsspec

    fmt = detect_format(url, fmt)
    if fmt == "hf":
        ds = _load_hf(url)
        fp = str(getattr(ds, "_fingerprint", ""))
        return InputFile(url=url, fmt="hf", num_records=len(ds), size=0, mtime=fp, digest=fp)
    try:
        fs, _, (path,) = fsspec.get_fs_token_paths(url)
        if not is_url(url):
            _check_regular(path)
        info = fs.info(path)
        size = int(info.get("size") or 0)
        mtime = str(info.get("mtime") or info.get("LastModified") or info.get("created") or info.get("ETag") or "")
        if fmt == "parquet":
            return _scan_parquet(url, size, mtime)
        return _scan_jsonl(url, size, mtime)
    except OSError as exc:
        raise _input_error(url, exc) from exc


def _check_regular(path: str) -> None:
    """A local input must be a regular file: reading a FIFO would block, a device never ends."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise _input_error(path, exc) from exc
    if not stat.S_ISREG(mode):
        kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "not a regular file")
        raise ConfigError(f"input is {kind}, not a regular file", path=path, key="input.paths",
                          hint="point input.paths at JSONL or Parquet files")


def _input_error(url: str, exc: OSError) -> ConfigError:
    reason = exc.strerror or str(exc)
    return ConfigError(f"cannot read input: {reason}", path=url, key="input.paths",
                       hint="check the file exists and is readable by this user")


def _scan_jsonl(url: str, size: int, mtime: str) -> InputFile:
    import fsspec
    import numpy as np

    checkpoints = [0]
    n = 0  # newlines seen
    offset = 0  # bytes seen (decompressed)
    last = b"\n"
    digest = hashlib.sha256()
    with fsspec.open(url, "rb", compression="infer") as f:
        while block := f.read(BLOCK):
            digest.update(block)
            newlines = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)
            if len(newlines):
                # the newline ending line k (1-based) is a checkpoint when k % STRIDE == 0
                first = (CHECKPOINT_STRIDE - 1 - n % CHECKPOINT_STRIDE)
                checkpoints.extend(int(offset + p + 1) for p in newlines[first::CHECKPOINT_STRIDE])
                n += len(newlines)
            offset += len(block)
            last = block[-1:]
    if last != b"\n":  # a last line without a newline is a line too
        n += 1
    return InputFile(url=url, fmt="jsonl", num_records=n, size=size, mtime=mtime, checkpoints=tuple(checkpoints),
                     digest=digest.hexdigest())


def _scan_parquet(url: str, size: int, mtime: str) -> InputFile:
    import fsspec
    import pyarrow.parquet as pq

    digest = hashlib.sha256()
    with fsspec.open(url, "rb") as f:
        try:
            n = pq.ParquetFile(f).metadata.num_rows
        except (ValueError, TypeError) as exc:  # pyarrow.ArrowInvalid: not a Parquet file
            raise ConfigError(f"not a readable Parquet file: {exc}", path=url, key="input.paths",
                              hint="check the file, or set input.format") from None
        f.seek(0)
        while block := f.read(BLOCK):
            digest.update(block)
    return InputFile(url=url, fmt="parquet", num_records=n, size=size, mtime=mtime, digest=digest.hexdigest())


def iter_segment(seg: Segment, max_record_bytes: int | None = None) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_or_row_number_1_based, record_dict | Bad | None)`` for a segment.

    ``None`` marks a blank JSONL line (not a record, counted separately). A record
    over ``max_record_bytes`` (default :data:`MAX_RECORD_BYTES`) is
    ``Bad("too_large")``; a JSONL line that long is skipped without being loaded.
    A read error is a :class:`~nemo_runspec.errors.ConfigError` naming the file.
    """
    limit = MAX_RECORD_BYTES if max_record_bytes is None else int(max_record_bytes)
    try:
        if seg.fmt == "jsonl":
            yield from _iter_jsonl(seg, limit)
        elif seg.fmt == "parquet":
            yield from _iter_parquet(seg, limit)
        else:
            ds = _load_hf(seg.url)
            for i in range(seg.start, seg.stop):
                yield i + 1, dict(ds[i])
    except OSError as exc:
        raise _input_error(seg.url, exc) from exc


def _too_large(limit: int) -> Bad:
    return Bad("too_large", f"record over max_record_bytes={limit}")


def _iter_jsonl(seg: Segment, limit: int) -> Iterator[tuple[int, Any]]:
    import fsspec

    with fsspec.open(seg.url, "rb", compression="infer") as f:
        f.seek(seg.byte_offset)
        idx = seg.skip_from
        while idx < seg.stop:
            line = f.readline(limit + 1)
            if not line:
                break
            oversized = len(line) > limit and not line.endswith(b"\n")
            if oversized:  # skip the rest of the line in bounded pieces
                while (rest := f.readline(BLOCK)) and not rest.endswith(b"\n"):
                    pass
            if idx >= seg.start:
                yield idx + 1, (_too_large(limit) if oversized else parse_json_line(line))
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


def _iter_parquet(seg: Segment, limit: int) -> Iterator[tuple[int, Any]]:
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
            check = batch.nbytes > limit  # only a batch this big can hold a row over the limit
            for i, rec in enumerate(batch.to_pylist()):
                r = row + i
                if seg.start <= r < seg.stop:
                    yield r + 1, (_too_large(limit) if check and _approx_size(rec) > limit else rec)
            row += n
            if row >= seg.stop:
                break


def _approx_size(value: Any) -> int:
    """Bytes of the text and binary values in a Parquet row (what its JSON line would mostly be)."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, dict):
        return sum(_approx_size(k) + _approx_size(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(_approx_size(v) for v in value)
    return 8


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
