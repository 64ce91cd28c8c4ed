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


def one_edit_away(word: str, candidates: Iterable[str]) -> str | None:
    """The first candidate ``word`` is at most one edit from (a letter changed, added or
    dropped, or two neighbours swapped), or None: a stricter test than :func:`closest`,
    for a typo among few short names (``rnage`` -> ``range``)."""
    for known in candidates:
        if word == known:
            return known
        if len(word) == len(known):
            diff = [i for i in range(len(word)) if word[i] != known[i]]
            if len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and word[diff[0]] == known[diff[1]] and word[diff[1]] == known[diff[0]]):
                return known
        elif abs(len(word) - len(known)) == 1:
            short, long = sorted((word, known), key=len)
            if any(long[:i] + long[i + 1:] == short for i in range(len(long))):
                return known
    return None
