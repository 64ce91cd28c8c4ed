"""The PEP 723 block reader (nemo_runspec/spec/pep723.py, docs/runspec/v1/spec.md): where a
``# /// script`` block starts and ends, line by line, as PEP 723's reference regex and
uv read it."""

from __future__ import annotations

import re

import pytest

from nemo_runspec.errors import RunspecError
from nemo_runspec.spec.pep723 import find_block, has_opener, split_lines

# PEP 723's reference implementation: what a block is.
_PEP_REGEX = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")


def _pep(text: str) -> list[str]:
    m = next(m for m in _PEP_REGEX.finditer(text) if m.group("type") == "script")
    return [ln[2:] if ln.startswith("# ") else ln[1:] for ln in m.group("content").splitlines()]


def test_the_block_ends_at_the_last_closer_of_its_comment_run() -> None:
    text = ("# /// script\n# [tool.runspec]\n# name = \"a/b\"\n# ///\n# x = 1\n# ///\n"
            "import os\n# ///\n")
    block = find_block(text, "s.py")
    assert block.opener_line == 1
    assert block.lines == ["[tool.runspec]", 'name = "a/b"', "///", "x = 1"] == _pep(text)
    assert block.script_line(2) == 3


def test_a_bare_hash_is_an_empty_content_line_and_other_lines_end_the_run() -> None:
    text = "x = 1\n# /// script\n#\n# a = 1\n# ///\n#not content\n# ///\n"
    block = find_block(text, "s.py")
    assert block.opener_line == 2
    assert block.lines == ["", "a = 1"] == _pep(text)


def test_a_closer_after_a_code_line_does_not_belong_to_the_block() -> None:
    with pytest.raises(RunspecError, match="opened at line 1 is never closed") as info:
        find_block("# /// script\n# a = 1\nimport os\n# ///\n", "s.py")
    assert info.value.line == 1


def test_adjacent_blocks_are_two_blocks() -> None:
    text = "# /// other\n# q = 1\n# /// script\n# a = 1\n# ///\n"
    with pytest.raises(RunspecError, match="never closed"):
        find_block("# /// script\n# a = 1\n# /// other\n# ///\n", "s.py")
    # the other block is unclosed and ignored; the script block is found after it
    block = find_block(text, "s.py")
    assert block.opener_line == 3 and block.lines == ["a = 1"]
    text2 = "# /// other\n# q = 1\n# ///\n# /// script\n# a = 1\n# ///\n"
    assert find_block(text2, "s.py").lines == ["a = 1"]


def test_two_script_blocks_name_both_lines() -> None:
    text = "# /// script\n# a = 1\n# ///\n\n# /// script\n# b = 2\n# ///\n"
    with pytest.raises(RunspecError, match="two '# /// script' blocks, at lines 1 and 5") as info:
        find_block(text, "s.py")
    assert info.value.line == 5


@pytest.mark.parametrize("opener", ["# /// script ", "#  /// script", "# ///script", "# /// script!"])
def test_only_an_exact_opener_opens(opener: str) -> None:
    with pytest.raises(RunspecError, match="no '# /// script' block"):
        find_block(f"{opener}\n# a = 1\n# ///\n", "s.py")


def test_bom_crlf_and_cr_are_read_as_plain_lines() -> None:
    assert split_lines("\ufeffa\r\nb\rc\n") == ["a", "b", "c", ""]
    block = find_block("\ufeff# /// script\r\n# a = 1\r\n# ///\r\n", "s.py")
    assert block.opener_line == 1 and block.lines == ["a = 1"]


def test_has_opener() -> None:
    assert has_opener("x\n# /// script\n")
    assert not has_opener("x\n# /// scripts\n# /// script \n")
