"""Local paths used by nemotron: ``$NEMOTRON_HOME`` and what lives under it.

``NEMOTRON_HOME`` defaults to ``~/.nemotron``; it holds local job directories
(``jobs/``) and caches (``cache/``). Nothing here creates directories: callers
create what they write.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_HOME = "~/.nemotron"


def nemotron_home() -> Path:
    """``$NEMOTRON_HOME`` (an empty value counts as unset), default ``~/.nemotron``."""
    return Path(os.environ.get("NEMOTRON_HOME") or DEFAULT_HOME).expanduser()


def jobs_dir() -> Path:
    """Where local job directories go: ``$NEMOTRON_HOME/jobs``."""
    return nemotron_home() / "jobs"


def cache_dir() -> Path:
    """Where caches go: ``$NEMOTRON_HOME/cache``."""
    return nemotron_home() / "cache"
