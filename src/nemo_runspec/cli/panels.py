"""Help pages as a few blocks (paragraphs and panels), printed without rich when it can.

Every help page of the CLI (``nemotron --help``, a group's, a recipe's) is a list
of three kinds of block: :class:`Para` (a padded paragraph, e.g. the usage line),
:class:`Blank` (an empty line) and :class:`Panel` (a titled, rounded box around
a grid of one or two columns; the first of two is bold cyan and never wraps).
:func:`print_blocks` prints them.

Importing ``rich.console``, ``rich.table`` and ``rich.panel`` costs about 30 ms,
half of what ``nemotron --help`` may take over importing Typer (its budget is
1.6x ``python -c "import typer, rich"``). So in the usual cases (the output is a
pipe, a file or an ordinary terminal, the text is printable ASCII) this module
lays the page out itself, following rich's own algorithms (``Padding`` and
``Text`` wrapping, ``Table.grid`` column widths, ``Panel`` borders), and writes
it in one go; in every other case (Windows, Jupyter, ``FORCE_COLOR``,
``NO_COLOR``, ``TTY_COMPATIBLE``, a dumb terminal, a non-UTF-8 stream, a very
narrow terminal, text beyond printable ASCII) rich renders the same blocks.
``tests/nemo_runspec/cli/test_panels.py`` compares the two, byte for byte
without colours and cell by cell (character and style) with them, over many
widths and generated pages, so a rich upgrade that changes its layout fails there.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Sequence
from typing import IO, Any

#: A grid cell: its text, or (text, rich style).
Cell = str | tuple[str, str]

#: Narrowest console laid out here (narrower ones are rare; rich handles them).
MIN_WIDTH = 20

#: Style of the first of two columns, of panel borders and titles.
KEY_STYLE = "bold cyan"
BORDER_STYLE = "dim"

_ATTRIBUTES = {"bold": 1, "dim": 2, "italic": 3, "underline": 4}
_COLORS = {"black": 30, "red": 31, "green": 32, "yellow": 33, "blue": 34, "magenta": 35,
           "cyan": 36, "white": 37}
_WORD = re.compile(r"\s*\S+\s*")
_TRAILING_SPACE = re.compile(r"\s+$")
_PRINTABLE = re.compile(r"[\x20-\x7e\n]*")


class Para:
    """``Padding(Text(text, style=style), padding)``: a paragraph padded (top,
    right, bottom, left) and wrapped to the console width."""

    __slots__ = ("text", "style", "padding")

    def __init__(self, text: str, style: str = "", padding: tuple[int, int, int, int] = (1, 1, 0, 1)) -> None:
        self.text, self.style, self.padding = text, style, padding


class Blank:
    """An empty line (``console.print()``)."""

    __slots__ = ()


class Panel:
    """A panel titled ``title`` (left, dim rounded border) around a grid of ``rows``.

    Rows of two cells make ``Table.grid(padding=(0, 2))`` with a bold cyan first
    column that does not wrap; rows of one cell ``Table.grid()``.
    """

    __slots__ = ("title", "rows")

    def __init__(self, title: str, rows: Sequence[Sequence[Cell]]) -> None:
        self.title = title
        self.rows = [tuple(c if isinstance(c, tuple) else (c, "") for c in row) for row in rows]


Block = Para | Blank | Panel


def print_blocks(blocks: Sequence[Block], file: IO[str] | None = None) -> None:
    """Print ``blocks`` to ``file`` (default: the current ``sys.stdout``) as rich would."""
    out = file if file is not None else sys.stdout
    target = terminal(out)
    if target is not None and supported(blocks):
        out.write(render(blocks, *target))
        out.flush()
        return
    print_with_rich(blocks, out)


def print_with_rich(blocks: Sequence[Block], file: IO[str] | None = None) -> None:
    """Print ``blocks`` through rich (the reference layout)."""
    from rich.console import Console

    console = Console(highlight=False, file=file)
    for renderable in rich_renderables(blocks):
        console.print(renderable)


def rich_renderables(blocks: Sequence[Block]) -> Iterable[Any]:
    """The rich renderables of ``blocks``."""
    from rich.padding import Padding
    from rich.panel import Panel as RichPanel
    from rich.table import Table
    from rich.text import Text

    for block in blocks:
        if isinstance(block, Para):
            yield Padding(Text(block.text, style=block.style), block.padding)
        elif isinstance(block, Blank):
            yield ""
        else:
            if _columns(block) == 2:
                table = Table.grid(padding=(0, 2))
                table.add_column(style=KEY_STYLE, no_wrap=True)
                table.add_column()
            else:
                table = Table.grid()
                table.add_column()
            for row in block.rows:
                table.add_row(*(Text(text, style=style) for text, style in row))
            yield RichPanel(table, title=block.title, title_align="left", border_style=BORDER_STYLE)


# --------------------------------------------------------------------------- when


def terminal(file: object) -> tuple[int, bool] | None:
    """(width, colours) rich's ``Console`` would use to write to ``file``, when it is
    a case :func:`render` covers; None otherwise (rich prints the page).

    Mirrors ``rich.console.Console``: the width is ``$COLUMNS``, else the size of
    the first of stdin, stdout and stderr that is a terminal, else 80; colours
    (ANSI styles) when ``file`` is a terminal.
    """
    if file is None or sys.platform == "win32" or getattr(file, "rich_proxied_file", None) is not None:
        return None
    env = os.environ
    if any(name in env for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE")):
        return None
    import builtins

    if hasattr(builtins, "get_ipython") or getattr(sys.stdin, "__module__", "").startswith("idlelib"):
        return None  # Jupyter, IDLE: rich's own rules
    encoding = (getattr(file, "encoding", None) or "utf-8").lower()
    if not encoding.startswith("utf"):
        return None  # rich draws ASCII boxes
    isatty = getattr(file, "isatty", None)
    try:
        color = bool(isatty()) if isatty is not None else False
    except ValueError:
        color = False
    if color and env.get("TERM", "").lower() in ("dumb", "unknown"):
        return None
    width = None
    columns = env.get("COLUMNS")
    if columns is not None and columns.isdigit():
        width = int(columns)
    else:
        for fd in _std_fds():
            try:
                width = os.get_terminal_size(fd).columns
            except (AttributeError, ValueError, OSError):
                continue
            break
        width = width or 80
    return (width, color) if width >= MIN_WIDTH else None


def _std_fds() -> list[int]:
    fds = []
    for stream, default in ((sys.__stdin__, 0), (sys.__stdout__, 1), (sys.__stderr__, 2)):
        try:
            fds.append(stream.fileno())  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001 - as rich: no usable stream, the usual number
            fds.append(default)
    return fds


def supported(blocks: Sequence[Block]) -> bool:
    """True when :func:`render` lays ``blocks`` out as rich does: printable ASCII,
    known styles, plain titles, grids of one or two columns."""
    for block in blocks:
        if isinstance(block, Para):
            if not (_plain(block.text) and _known(block.style)):
                return False
        elif isinstance(block, Panel):
            title = block.title
            # rich reads a str title as markup (and :emoji: codes)
            if not _plain(title) or "\n" in title or "[" in title or ":" in title or "\\" in title:
                return False
            if not block.rows or len({len(row) for row in block.rows}) != 1 or _columns(block) not in (1, 2):
                return False
            if not all(_plain(text) and _known(style) for row in block.rows for text, style in row):
                return False
        elif not isinstance(block, Blank):
            return False
    return True


def _plain(text: str) -> bool:
    return _PRINTABLE.fullmatch(text) is not None


def _known(style: str) -> bool:
    return all(word in _ATTRIBUTES or word in _COLORS for word in style.split())


def _columns(panel: Panel) -> int:
    return len(panel.rows[0]) if panel.rows else 0


# --------------------------------------------------------------------------- layout (rich's)


def render(blocks: Sequence[Block], width: int, color: bool) -> str:
    """The text rich prints for ``blocks`` on a console ``width`` cells wide (with
    ANSI styles when ``color``); only for blocks :func:`supported` accepts."""
    out: list[str] = []
    for block in blocks:
        if isinstance(block, Para):
            lines = _para(block, width)
        elif isinstance(block, Blank):
            lines = [[]]
        else:
            lines = _panel(block, width)
        for runs in lines:
            for text, style in runs:
                if color and style and text:
                    out.append(f"\x1b[{_sgr(style)}m{text}\x1b[0m")
                else:
                    out.append(text)
            out.append("\n")
    return "".join(out)


Run = tuple[str, str]  # (text, style)


def _para(block: Para, width: int) -> list[list[Run]]:
    top, right, bottom, left = block.padding
    blank = [(" " * width, "")]
    lines: list[list[Run]] = [blank] * top
    for line in _text_lines(block.text, width - left - right):
        lines.append([(" " * left, ""), (line, block.style), (" " * right, "")])
    return lines + [blank] * bottom


def _panel(block: Panel, width: int) -> list[list[Run]]:
    inner = width - 2
    if width <= 4:
        top = [("╭" + "─" * inner + "╮", BORDER_STYLE)]
    else:
        title = _set_cell_size(f" {block.title} ", width - 4) if len(block.title) + 2 > width - 4 else f" {block.title} "
        top = [("╭─", BORDER_STYLE), (title, BORDER_STYLE),
               ("─" * (width - 4 - len(title)) + "─╮", BORDER_STYLE)]
    lines = [top]
    body = width - 4
    for grid_line in _grid(block, body) if body >= 1 else []:
        lines.append([("│", BORDER_STYLE), (" ", "")] + _fit_runs(grid_line, body)
                     + [(" ", ""), ("│", BORDER_STYLE)])
    lines.append([("╰" + "─" * inner + "╯", BORDER_STYLE)])
    return lines


def _grid(block: Panel, max_width: int) -> list[list[Run]]:
    """Lines of the grid of ``block`` in ``max_width`` cells (``Table.grid``)."""
    two = _columns(block) == 2
    # per column: (right padding, no_wrap, cell style)
    specs = [(2, True, KEY_STYLE), (0, False, "")] if two else [(0, False, "")]
    columns = [[row[i] for row in block.rows] for i in range(len(specs))]

    def measure(width: int, index: int) -> tuple[int, int]:
        pad = specs[index][0] if two else None
        return _measure_column(width, [text for text, _ in columns[index]], pad)

    widths = [measure(max_width, i)[1] or 1 for i in range(len(specs))]
    if sum(widths) > max_width:
        widths = _collapse_widths(widths, [not spec[1] for spec in specs], max_width)
        if sum(widths) > max_width:
            widths = _ratio_reduce(sum(widths) - max_width, [1] * len(widths), widths, widths)
        widths = [measure(w, i)[1] or 0 for i, w in enumerate(widths)]

    lines: list[list[Run]] = []
    for row in block.rows:
        cells = []
        for i, (text, style) in enumerate(row):
            pad, no_wrap, cell_style = specs[i]
            w = widths[i]
            if two:
                body = [[(line, _add(cell_style, style)), (" " * pad, cell_style)]
                        for line in _text_lines(text, w - pad, "left", "ellipsis", no_wrap)] if w >= 1 else []
            else:
                body = [[(line, _add(cell_style, style))]
                        for line in _text_lines(text, w, "left", "ellipsis", no_wrap)]
            cells.append([_fit_runs(line, w) for line in body])
        height = max(1, *(len(cell) for cell in cells))
        for line_no in range(height):
            runs: list[Run] = []
            for i, cell in enumerate(cells):
                runs += cell[line_no] if line_no < len(cell) else [(" " * widths[i], specs[i][2])]
            lines.append(runs)
    return lines


def _measure_column(max_width: int, texts: list[str], pad: int | None) -> tuple[int, int]:
    """``Table._measure_column`` of cells ``Padding(Text, right=pad)`` (``pad`` None:
    the cells are the texts themselves)."""
    if max_width < 1:
        return 0, 0
    low, high = [], []
    for text in texts:
        if pad is None:
            m = _get(max_width, _measure_text(text))
        else:
            m = _get(max_width, _measure_padded(max_width, text, pad))
        low.append(m[0])
        high.append(m[1])
    lo = max(low) if low else 1
    hi = max(high) if high else max_width
    return min(lo, max_width), min(hi, max_width)


def _measure_padded(max_width: int, text: str, pad: int) -> tuple[int, int]:
    if max_width - pad < 1:
        return max_width, max_width
    lo, hi = _get(max_width, _measure_text(text))  # as rich: the text measured in the full width
    return min(lo + pad, max_width), min(hi + pad, max_width)


def _measure_text(text: str) -> tuple[int, int]:
    lines = text.splitlines()
    longest = max(len(line) for line in lines) if lines else 0
    words = text.split()
    return (max(len(word) for word in words) if words else longest), longest


def _get(max_width: int, measured: tuple[int, int]) -> tuple[int, int]:
    """``Measurement.get``: normalised and capped at ``max_width``."""
    if max_width < 1:
        return 0, 0
    lo, hi = _normalize(*measured)
    lo, hi = min(lo, max_width), min(hi, max_width)
    if hi < 1:
        return 0, 0
    return _normalize(lo, hi)


def _normalize(lo: int, hi: int) -> tuple[int, int]:
    lo = min(max(0, lo), hi)
    return max(0, lo), max(0, max(lo, hi))


def _collapse_widths(widths: list[int], wrapable: list[bool], max_width: int) -> list[int]:
    """``Table._collapse_widths``."""
    total = sum(widths)
    excess = total - max_width
    if any(wrapable):
        while total and excess > 0:
            max_column = max(w for w, wrap in zip(widths, wrapable, strict=True) if wrap)
            second = max(w if wrap and w != max_column else 0 for w, wrap in zip(widths, wrapable, strict=True))
            difference = max_column - second
            ratios = [1 if (w == max_column and wrap) else 0 for w, wrap in zip(widths, wrapable, strict=True)]
            if not any(ratios) or not difference:
                break
            widths = _ratio_reduce(excess, ratios, [min(excess, difference)] * len(widths), widths)
            total = sum(widths)
            excess = total - max_width
    return widths


def _ratio_reduce(total: int, ratios: list[int], maximums: list[int], values: list[int]) -> list[int]:
    """``rich._ratio.ratio_reduce``."""
    ratios = [ratio if maximum else 0 for ratio, maximum in zip(ratios, maximums, strict=True)]
    total_ratio = sum(ratios)
    if not total_ratio:
        return values[:]
    remaining = total
    result = []
    for ratio, maximum, value in zip(ratios, maximums, values, strict=True):
        if ratio and total_ratio > 0:
            distributed = min(maximum, round(ratio * remaining / total_ratio))
            result.append(value - distributed)
            remaining -= distributed
            total_ratio -= ratio
        else:
            result.append(value)
    return result


def _text_lines(text: str, width: int, justify: str = "default", overflow: str = "fold",
                no_wrap: bool = False) -> list[str]:
    """The lines of ``Text(text)`` rendered ``width`` cells wide, each padded to it."""
    if width < 1:
        return []  # rich renders nothing in no space
    lines: list[str] = []
    for line in text.split("\n"):
        if no_wrap:
            pieces = [line]
        else:
            bounds = [0, *_divide_line(line, width, fold=overflow == "fold"), len(line)]
            pieces = [_rstrip_end(line[a:b], width) for a, b in zip(bounds, bounds[1:], strict=False)]
        if justify == "left":
            pieces = [_truncate(piece, width, overflow, pad=True) for piece in pieces]
        lines.extend(_truncate(piece, width, overflow) for piece in pieces)
    return [_set_cell_size(line, width) if len(line) != width else line for line in lines]


def _divide_line(text: str, width: int, fold: bool) -> list[int]:
    """``rich._wrap.divide_line`` for single-cell characters."""
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group(0)
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:
            if fold:
                chunks = [word[i:i + width] for i in range(0, len(word), width)]
                for index, chunk in enumerate(chunks):
                    if start:
                        breaks.append(start)
                    if index == len(chunks) - 1:
                        offset = len(chunk)
                    else:
                        start += len(chunk)
            else:
                if start:
                    breaks.append(start)
                offset = len(word)
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    return breaks


def _rstrip_end(text: str, size: int) -> str:
    if len(text) > size:
        match = _TRAILING_SPACE.search(text)
        if match is not None:
            return text[: len(text) - min(len(match.group(0)), len(text) - size)]
    return text


def _truncate(text: str, width: int, overflow: str, pad: bool = False) -> str:
    length = len(text)
    if length > width:
        text = _set_cell_size(text, width - 1) + "…" if overflow == "ellipsis" else _set_cell_size(text, width)
    if pad and length < width:
        text += " " * (width - length)
    return text


def _set_cell_size(text: str, total: int) -> str:
    return text + " " * (total - len(text)) if len(text) < total else text[:total]


def _fit_runs(runs: list[Run], width: int) -> list[Run]:
    """Crop or pad (with spaces) a line of runs to ``width`` cells."""
    length = sum(len(text) for text, _ in runs)
    if length < width:
        return runs + [(" " * (width - length), "")]
    if length == width:
        return runs
    fitted: list[Run] = []
    used = 0
    for text, style in runs:
        if used + len(text) < width:
            fitted.append((text, style))
            used += len(text)
        else:
            fitted.append((text[: width - used], style))
            break
    return fitted


def _add(base: str, extra: str) -> str:
    """``Style(base) + Style(extra)`` for the styles :func:`supported` accepts."""
    if not base:
        return extra
    if not extra:
        return base
    words = extra.split()
    if any(word in _COLORS for word in words):
        base = " ".join(word for word in base.split() if word not in _COLORS)
    return f"{base} {extra}"


def _sgr(style: str) -> str:
    """The SGR parameters rich writes for ``style`` (attributes, then the colour)."""
    words = style.split()
    codes = sorted({_ATTRIBUTES[w] for w in words if w in _ATTRIBUTES})
    colors = [_COLORS[w] for w in words if w in _COLORS]
    return ";".join(str(c) for c in [*codes, *colors[-1:]])
