"""Bad-record accounting and the ``report.json`` written next to every output.

Nothing is dropped silently: each skipped record is counted by reason, and the
first few are kept as examples (file, line, reason, detail).
"""

from __future__ import annotations

import json
import os
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


def write_json(path: Path, data: Any) -> None:
    """Write JSON deterministically (sorted keys, fixed indent) via a temp file + rename."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


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
