"""How a report writes times, durations and numbers (the page and the terminal alike)."""

from __future__ import annotations

import time


def when(t: float | None) -> str:
    """Unix seconds as local ``2025-06-01 10:00:00``; ``-`` when unknown."""
    return "-" if t is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def span(seconds: float | None) -> str:
    """``1h02m03s``, ``4m05s``, ``6s``; ``-`` when unknown."""
    if seconds is None:
        return "-"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m{sec:02d}s" if h else (f"{m}m{sec:02d}s" if m else f"{sec}s")


def number(value: float | None, digits: int = 4) -> str:
    """``6.4373``, or with ``digits=0`` ``2,510``; ``-`` when unknown."""
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"
