"""Issue 30, class 8: a line that breaks a PEP 723 block is pointed at, not the opener.

A tab where ``# `` belongs, a missing space, an indented comment, an empty line
or a plain code line inside a block that is closed further down: the error names
that line and what is wrong with it. A block that is really never closed still
names its opener.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nemo_runspec import parse_text
from nemo_runspec.errors import RunspecError

BODY = ["[tool.runspec]", 'name = "a/b"', "", "[tool.runspec.run]", 'launch = "direct"',
        "[tool.runspec.resources]", "nodes = 1"]
BROKEN = {
    "#\tname = 1": ("has a tab after '#'", "write '# ' (a hash and a space) at its start"),
    "#name = 1": ("has no space after '#' ('#name = 1')", "write '# ' (a hash and a space) at its start"),
    "  # name = 1": ("is indented", "start the line with '#' in the first column"),
    "": ("is empty", "write '#' alone for an empty line inside the block"),
}


def _block(lines: list[str]) -> list[str]:
    return ["# /// script", *[f"# {ln}" if ln else "#" for ln in lines], "# ///"]


@settings(max_examples=200, deadline=None)
@given(pre=st.lists(st.sampled_from(["#!/usr/bin/env python", "import os", "", "# a comment"]), max_size=3),
       at=st.integers(min_value=1, max_value=len(BODY)), bad=st.sampled_from(sorted(BROKEN)),
       crlf=st.booleans())
def test_the_breaking_line_is_named(pre: list[str], at: int, bad: str, crlf: bool) -> None:
    block = _block(BODY)
    opener = len(pre) + 1
    block.insert(at, bad)
    text = ("\r\n" if crlf else "\n").join([*pre, *block, "print(1)"]) + "\n"
    with pytest.raises(RunspecError) as exc:
        parse_text(text, "s.py")
    what, hint = BROKEN[bad]
    line = opener + at
    closer = opener + len(block) - 1
    assert exc.value.line == line
    assert exc.value.problem == (f"line {line} of the '# /// script' block (lines {opener}-{closer}) {what}; "
                                 "every line of the block is '#' alone or '# ' followed by TOML")
    assert exc.value.hint == hint


def test_a_block_that_is_never_closed_names_its_opener_and_where_it_stops() -> None:
    with pytest.raises(RunspecError) as exc:
        parse_text("x = 0\n# /// script\n# [tool.runspec]\n# name = 'a'\nimport os\n", "s.py")
    assert exc.value.line == 2
    assert exc.value.problem == ("'# /// script' block opened at line 2 is never closed with '# ///'; its comment "
                                 "lines stop at line 5 ('import os')")
    with pytest.raises(RunspecError) as exc:
        parse_text("# /// script\n# [tool.runspec]\n", "s.py")
    assert exc.value.problem == "'# /// script' block opened at line 1 is never closed with '# ///'"


def test_code_between_the_comments_and_a_closer_ends_the_block() -> None:
    with pytest.raises(RunspecError) as exc:
        parse_text("# /// script\n# [tool.runspec]\nimport os\n# ///\n", "s.py")
    assert (exc.value.line, exc.value.problem) == (1, "'# /// script' block opened at line 1 is never closed with "
                                                      "'# ///'; its comment lines stop at line 3 ('import os')")


def test_a_closer_of_a_later_block_is_not_ours() -> None:
    text = "# /// script\n# [tool.runspec]\nx = 1\n# /// pyproject\n# a = 1\n# ///\n"
    with pytest.raises(RunspecError, match="never closed") as exc:
        parse_text(text, "s.py")
    assert exc.value.line == 1
