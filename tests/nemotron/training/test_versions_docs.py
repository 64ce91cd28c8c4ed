"""docs/training.md prints the compatibility table as the code has it (so the page cannot go stale)."""

from __future__ import annotations

from pathlib import Path

from nemotron.training.versions import markdown_table

DOC = Path(__file__).resolve().parents[3] / "docs" / "training.md"


def test_the_page_holds_the_table_of_the_code():
    text = DOC.read_text(encoding="utf-8")
    start = text.index("<!-- versions-table:")
    body = text[text.index("-->", start) + 4:text.index("<!-- /versions-table -->")]
    assert body == markdown_table(), "regenerate: python -c 'from nemotron.training.versions import " \
                                     "markdown_table; print(markdown_table())'"
