"""GlobalContext: the CLI state every recipe command shares.

Global options (``-c/--config``, ``-r/--run``, ``-b/--batch``, ``-d/--dry-run``,
``--force-squash``, ``--env-file``, ``--debug``) may appear before or after the
subcommand; :func:`split_global_args` pulls them out of ``argv`` wherever they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Mode = Literal["run", "batch", "local"]


@dataclass
class GlobalContext:
    """Options shared by all recipe commands, plus the words left for the recipe."""

    config: str | None = None
    run: str | None = None
    batch: str | None = None
    dry_run: bool = False
    force_squash: bool = False
    env_file: str | None = None
    debug: bool = False
    overrides: list[str] = field(default_factory=list)
    passthrough: list[str] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)

    @property
    def mode(self) -> Mode:
        """``run`` (attached), ``batch`` (detached) or ``local`` (no profile)."""
        if self.run is not None:
            return "run"
        if self.batch is not None:
            return "batch"
        return "local"

    @property
    def profile(self) -> str | None:
        """The env.toml profile selected with ``--run`` or ``--batch``."""
        return self.run if self.run is not None else self.batch

    @property
    def attached(self) -> bool:
        """True unless the job is submitted detached with ``--batch``."""
        return self.mode != "batch"
