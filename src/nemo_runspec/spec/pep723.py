"""Find the PEP 723 ``# /// script`` block of a file, line by line.

The rules follow PEP 723 and what uv and pipx do with its edge cases: a UTF-8
BOM is stripped, CRLF is normalised, adjacent blocks are two blocks, an
unclosed ``script`` block or two of them are errors naming the line.
"""

from __future__ import annotations

import re

from nemo_runspec.errors import RunspecError

#: The PEP 723 block type that carries ``[tool.runspec]``.
BLOCK_TYPE = "script"

_OPENER = re.compile(r"# /// ([a-zA-Z0-9-]+)")
_CLOSER = "# ///"
_BOM = "\ufeff"


class Block:
    """The ``script`` block: its TOML text and where it sits in the file."""

    __slots__ = ("opener_line", "lines")

    def __init__(self, opener_line: int, lines: list[str]) -> None:
        self.opener_line = opener_line  # 1-based line of "# /// script"
        self.lines = lines  # TOML lines; lines[k] is script line opener_line + 1 + k

    def script_line(self, toml_line: int) -> int:
        """Map a 1-based TOML line number to the 1-based script line number."""
        return self.opener_line + toml_line


def _is_content(line: str) -> bool:
    return line == "#" or line.startswith("# ")


def split_lines(text: str) -> list[str]:
    """``text``'s lines, without a leading BOM, with CRLF and CR read as line ends."""
    if text.startswith(_BOM):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.split("\n")


def find_block(text: str, path: str) -> Block:
    """Locate the single ``# /// script`` block (PEP 723 rules, line by line).

    A block runs from its opener over consecutive comment lines; it ends at the
    last ``# ///`` line of that run (PEP 723 gives the closing line precedence
    only when no content follows). A line that opens another block also ends the
    run, so two adjacent blocks are seen as two blocks, not as one broken one.
    """
    lines = split_lines(text)
    found: list[tuple[int, list[str]]] = []
    n = len(lines)
    i = 0
    while i < n:
        line = lines[i]
        if not line.startswith("# /// "):
            i += 1
            continue
        m = _OPENER.fullmatch(line)
        if m is None:
            i += 1
            continue
        block_type = m.group(1)
        close = -1
        j = i + 1
        while j < n:
            cur = lines[j]
            if cur == _CLOSER:
                close = j
            elif not _is_content(cur) or _OPENER.fullmatch(cur):
                break
            j += 1
        if close < 0:
            if block_type == BLOCK_TYPE:
                raise _unclosed(lines, i, j, path)
            i += 1
            continue
        if block_type == BLOCK_TYPE:
            content = [ln[2:] if len(ln) > 1 else "" for ln in lines[i + 1 : close]]
            found.append((i + 1, content))
        i = close + 1
    if not found:
        raise RunspecError(
            f"no '# /// {BLOCK_TYPE}' block",
            path=path,
            hint="add a PEP 723 block: '# /// script', '# [tool.runspec]', "
            "'# name = \"...\"', '# ///' at the top of the script",
        )
    if len(found) > 1:
        first, second = found[0][0], found[1][0]
        raise RunspecError(
            f"two '# /// {BLOCK_TYPE}' blocks, at lines {first} and {second}",
            path=path,
            line=second,
            hint="PEP 723 allows one block per type; merge them into one",
        )
    return Block(found[0][0], found[0][1])


def _unclosed(lines: list[str], opener: int, stop: int, path: str) -> RunspecError:
    """The error for a ``script`` block whose comment lines end (at ``stop``, 0-based)
    before a closing ``# ///``: when a closer follows and the line at ``stop`` is a
    comment line gone wrong (a tab or no space after ``#``, indented, empty), that line
    broke the block and the error points at it; else (code follows the comments) the
    block is never closed, and the error says where its comment lines stop."""
    later = None
    for k in range(stop, len(lines)):
        if lines[k] == _CLOSER:
            later = k
            break
        if _OPENER.fullmatch(lines[k]):
            break  # a closer after this one is that block's
    bad = lines[stop] if stop < len(lines) else ""
    meant = not bad.strip() or bad.lstrip().startswith("#")  # a comment line gone wrong, not code after the block
    if stop < len(lines) and later is not None and meant and not _OPENER.fullmatch(bad):
        if bad.startswith("#\t"):
            what, fix = "has a tab after '#'", "write '# ' (a hash and a space) at its start"
        elif not bad.strip():
            what, fix = "is empty", "write '#' alone for an empty line inside the block"
        elif bad.lstrip().startswith("#") and bad[0] != "#":
            what, fix = "is indented", "start the line with '#' in the first column"
        else:
            what, fix = f"has no space after '#' ({bad[:12]!r})", "write '# ' (a hash and a space) at its start"
        return RunspecError(
            f"line {stop + 1} of the '# /// {BLOCK_TYPE}' block (lines {opener + 1}-{later + 1}) {what}; every "
            "line of the block is '#' alone or '# ' followed by TOML",
            path=path, line=stop + 1, hint=fix)
    at_end = stop >= len(lines) or (stop == len(lines) - 1 and not lines[stop])
    where = "" if at_end else f"; its comment lines stop at line {stop + 1} ({lines[stop][:30]!r})"
    return RunspecError(
        f"'# /// {BLOCK_TYPE}' block opened at line {opener + 1} is never closed with '# ///'{where}",
        path=path,
        line=opener + 1,
        hint="end the block with a line that is exactly '# ///'",
    )


def has_opener(text: str) -> bool:
    """True when a line of ``text`` opens a ``script`` block (closed or not)."""
    return f"# /// {BLOCK_TYPE}" in split_lines(text)
