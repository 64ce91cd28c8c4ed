"""TOML key path -> line number, for error messages (env.toml and runspec blocks).

``tomllib`` reports no positions for valid documents, so pydantic/validation
errors would have no line to point at. This scanner walks the text once,
tracking table headers, dotted and quoted keys, multi-line strings and
brackets, and maps each key path to the line that set it. Standard library only.
"""

from __future__ import annotations

import re
import tomllib

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _parse_key(text: str, pos: int) -> tuple[list[str], int]:
    """Parse a (dotted, possibly quoted) TOML key at ``text[pos:]``."""
    parts: list[str] = []
    n = len(text)
    while True:
        while pos < n and text[pos] in " \t":
            pos += 1
        if pos >= n:
            return parts, pos
        ch = text[pos]
        if ch == '"':
            end = pos + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            # the text is valid TOML (callers parse it with tomllib first), so the quoted
            # key is a valid basic string: tomllib decodes its escapes
            parts.append(tomllib.loads("k = " + text[pos : end + 1])["k"])
            pos = end + 1
        elif ch == "'":
            end = text.find("'", pos + 1)
            end = n if end < 0 else end
            parts.append(text[pos + 1 : end])
            pos = end + 1
        else:
            m = _BARE_KEY.match(text, pos)
            if not m:
                return parts, pos
            parts.append(m.group(0))
            pos = m.end()
        while pos < n and text[pos] in " \t":
            pos += 1
        if pos < n and text[pos] == ".":
            pos += 1
            continue
        return parts, pos


def _scan_value(text: str, pos: int, ml: str | None, depth: int) -> tuple[str | None, int]:
    """Advance the multi-line state (open multi-line string, bracket depth) over a line."""
    n = len(text)
    while pos < n:
        if ml is not None:
            end = text.find(ml, pos)
            if ml == '"""':
                while end > 0 and _escaped(text, end):
                    end = text.find(ml, end + 1)
            if end < 0:
                return ml, depth
            pos = end + 3
            while pos < n and text[pos] == ml[0]:  # up to two extra quotes may close
                pos += 1
            ml = None
            continue
        ch = text[pos]
        if ch == "#":
            break
        if ch in "\"'":
            triple = ch * 3
            if text.startswith(triple, pos):
                ml = triple
                pos += 3
                continue
            end = pos + 1
            while end < n and text[end] != ch:
                end += 2 if (ch == '"' and text[end] == "\\") else 1
            pos = end + 1
            continue
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        pos += 1
    return ml, depth


def _escaped(text: str, idx: int) -> bool:
    slashes = 0
    while idx - 1 - slashes >= 0 and text[idx - 1 - slashes] == "\\":
        slashes += 1
    return slashes % 2 == 1


def line_map(text: str) -> dict[tuple[str, ...], int]:
    """Map each table header and key (as a path) to its line. ``text`` is valid TOML."""
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    ml: str | None = None
    depth = 0
    for lineno, line in enumerate(text.split("\n"), 1):  # tomllib counts "\n" only
        if ml is not None or depth > 0:
            ml, depth = _scan_value(line, 0, ml, depth)
            continue
        stripped = line.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        offset = len(line) - len(stripped)
        if stripped.startswith("["):
            skip = 2 if stripped.startswith("[[") else 1
            parts, _ = _parse_key(line, offset + skip)
            table = tuple(parts)
            for i in range(1, len(table) + 1):
                lines.setdefault(table[:i], lineno)
            continue
        parts, pos = _parse_key(line, offset)
        if not parts:
            continue
        full = table + tuple(parts)
        for i in range(len(table) + 1, len(full)):
            lines.setdefault(full[:i], lineno)
        lines[full] = lineno
        eq = line.find("=", pos)
        if eq >= 0:
            ml, depth = _scan_value(line, eq + 1, None, 0)
    return lines


def deepest_line(text: str) -> int:
    """1-based line with the most ``[``/``{`` openers: where a value nests deepest
    (``tomllib`` recurses once per level and reports no line when it runs out)."""
    counts = [ln.count("[") + ln.count("{") for ln in text.splitlines()] or [0]
    return counts.index(max(counts)) + 1
