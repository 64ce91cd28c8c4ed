"""Process checks the signal and lifeline tests share."""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """True while ``pid`` exists and has not ended: a zombie (ended, not yet reaped by its
    parent) counts as gone, since it runs nothing and holds nothing but its exit code."""
    try:
        # the state follows the command name, which is in parentheses and may hold anything
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
