"""Bad-record accounting and the ``report.json`` written next to every output.

Nothing is dropped silently: each skipped record is counted by reason, and the
first few are kept as examples (file, line, reason, detail).
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nemo_runspec.errors import ExecutionError

MAX_EXAMPLES = 10


class BadRecordLog:
    """Counts bad records by reason and keeps the first ``max_examples`` of them."""

    def __init__(self, max_examples: int = MAX_EXAMPLES) -> None:
        self.max_examples = max_examples
        self.counts: dict[str, int] = {}
        self.examples: list[dict[str, Any]] = []

    def add(self, file: str, line: int, reason: str, detail: str = "") -> None:
        """Record one bad record."""
        self.counts[reason] = self.counts.get(reason, 0) + 1
        if len(self.examples) < self.max_examples:
            self.examples.append({"file": file, "line": line, "reason": reason, "detail": detail})

    @property
    def total(self) -> int:
        """Number of bad records."""
        return sum(self.counts.values())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready ``{"total", "by_reason", "examples"}``."""
        return {"total": self.total, "by_reason": dict(sorted(self.counts.items())), "examples": self.examples}


def merge_bad(parts: list[dict[str, Any]], max_examples: int = MAX_EXAMPLES) -> dict[str, Any]:
    """Merge per-shard bad-record dicts in shard order."""
    log = BadRecordLog(max_examples)
    for p in parts:
        for reason, n in p.get("by_reason", {}).items():
            log.counts[reason] = log.counts.get(reason, 0) + n
        for ex in p.get("examples", []):
            if len(log.examples) < max_examples:
                log.examples.append(ex)
    return log.to_dict()


def check_bad_fraction(records: int, bad: int, max_fraction: float | None, *, report_path: Path | None = None) -> None:
    """Raise :class:`ExecutionError` if more than ``max_fraction`` of the records were bad."""
    if max_fraction is None or records <= 0:
        return
    frac = bad / records
    if frac > float(max_fraction):
        where = f"; see {report_path}" if report_path else ""
        raise ExecutionError(
            f"{bad} of {records} input records were bad ({frac:.2%} > max_bad_fraction {float(max_fraction):.2%}){where}",
            key="max_bad_fraction",
            hint="fix the inputs or raise max_bad_fraction",
        )


#: A temporary file of :func:`tmp_path_for`: ``.<final name>.<writer pid>-<8 hex>.tmp``.
TMP_RE = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)-[0-9a-f]{8}\.tmp$")


def tmp_path_for(dest: Path) -> Path:
    """A temporary name beside ``dest`` that no other writer uses: ``.<name>.<pid>-<8 hex>.tmp``.

    The pid says which process wrote it (a later run sweeps those of dead
    writers); the random part keeps two writers, even with the same pid on two
    nodes, from ever sharing a file.
    """
    return dest.with_name(f".{dest.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")


def named_os_error(exc: OSError, path: str | os.PathLike[str]) -> OSError:
    """``exc`` naming ``path`` if it names no file (a failed ``write()``, pyarrow's errors)."""
    if exc.filename:
        return exc
    code = exc.errno
    if code is None:  # pyarrow: "... Detail: [errno 28] No space left on device"
        found = re.search(r"\[errno (\d+)\]", str(exc))
        code = int(found.group(1)) if found else None
    reason = os.strerror(code) if code else (exc.strerror or str(exc))
    return OSError(code, reason, os.fspath(path))


@contextmanager
def atomic_write(dest: Path) -> Iterator[Path]:
    """Yield a unique temporary path for ``dest``; rename it into place if the block succeeds.

    On any failure the temporary file is removed (nothing half-written is left)
    and an ``OSError`` that names no file is re-raised naming ``dest``.
    """
    tmp = tmp_path_for(dest)
    try:
        yield tmp
        os.replace(tmp, dest)
    except BaseException as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        if isinstance(exc, OSError):
            named = named_os_error(exc, dest)
            if named is not exc:
                raise named from exc
        raise


def write_json(path: Path, data: Any) -> None:
    """Write JSON deterministically (sorted keys, fixed indent) via a unique temp file + rename."""
    text = json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"
    with atomic_write(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def format_bad_summary(bad: dict[str, Any], records: int) -> list[str]:
    """Human-readable lines describing the bad records."""
    if not bad.get("total"):
        return [f"bad records: 0 of {records}"]
    reasons = ", ".join(f"{k}={v}" for k, v in bad["by_reason"].items())
    lines = [f"bad records: {bad['total']} of {records} ({reasons})"]
    for ex in bad.get("examples", [])[:5]:
        detail = f" - {ex['detail']}" if ex.get("detail") else ""
        lines.append(f"  {ex['file']}:{ex['line']}: {ex['reason']}{detail}")
    return lines
