"""Read a nested mapping by a dotted key (``"run.wandb.project"``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def lookup(data: Any, dotted: str) -> Any:
    """``data["a"]["b"]`` for ``"a.b"``; None where a part is missing or a level is not a mapping.

    A present ``None`` and an absent key read the same; callers that must tell them
    apart walk the mapping themselves.
    """
    for part in dotted.split("."):
        if not isinstance(data, Mapping):
            return None
        data = data.get(part)
    return data
