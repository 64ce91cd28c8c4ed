"""'Did you mean ...?' suggestions for unknown names."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: Valid choices named in a hint; a longer list ends in "... (N more)".
LISTED = 20


def closest(word: str, candidates: Iterable[str], cutoff: float = 0.6) -> str | None:
    """Return the candidate closest to ``word`` or None when nothing is close."""
    pool = [c for c in candidates if isinstance(c, str)]
    word = word[:200]  # difflib is quadratic in the word's length
    matches = difflib.get_close_matches(word, pool, n=1, cutoff=cutoff)
    if matches:
        return matches[0]
    lowered = {c.lower(): c for c in pool}
    return lowered.get(word.lower())


def did_you_mean(word: str, candidates: Iterable[str], *, listing: bool = False) -> str | None:
    """Hint text for an unknown ``word``: ``did you mean 'x'?`` and/or the valid choices.

    With ``listing=True`` the hint also names every valid choice, which is what
    a user wants when the set is small (profiles, enum values).
    """
    pool = sorted({c for c in candidates if isinstance(c, str)})
    best = closest(word, pool)
    parts = []
    if best is not None:
        parts.append(f"did you mean '{best}'?")
    if listing or best is None:
        if pool:
            shown = pool if len(pool) <= LISTED else [*pool[:LISTED], f"... ({len(pool) - LISTED} more)"]
            parts.append("valid: " + ", ".join(shown))
    return "; ".join(parts) if parts else None
