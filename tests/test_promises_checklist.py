"""docs/dev/promises.md names, for every documented promise, the tests that hold it:
each file and test function named there must exist (a renamed or deleted test would
leave a promise unchecked without anyone noticing)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKLIST = ROOT / "docs" / "dev" / "promises.md"
_REF = re.compile(r"`(tests/[\w/.-]+\.py)(?:::(\w+))?`")


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_every_test_the_checklist_names_exists() -> None:
    refs = _REF.findall(CHECKLIST.read_text())
    assert len(refs) > 40, "the checklist lost its test references"
    missing = []
    for file, func in refs:
        path = ROOT / file
        if not path.is_file():
            missing.append(file)
        elif func and func not in _functions(path):
            missing.append(f"{file}::{func}")
    assert missing == []


def test_every_row_names_a_test() -> None:
    rows = [ln for ln in CHECKLIST.read_text().splitlines()
            if ln.startswith("| ") and not ln.startswith("| Promise") and not ln.startswith("|---")]
    assert rows
    assert [r for r in rows if not _REF.search(r)] == []
