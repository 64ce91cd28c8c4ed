"""The typed check of a recipe's config, as a recipe command hands it to ``compile_job``.

Kept apart from :mod:`nemotron.training.schema` so that a command module can name it
at import time (``--help``) without importing pydantic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def typed_config(kind: str) -> Callable[[Any, Sequence[str]], None]:
    """``compile_job``'s ``check`` for recipe ``kind`` (``pretrain``, ``sft``, ``rl``,
    ``eval``): every key the scripts read, typed (:func:`nemotron.training.schema.check_config`),
    before the job's ``${art:...}`` are looked up, so a mistyped value is said first."""

    def check(train_config: Any, overrides: Sequence[str]) -> None:
        from nemotron.training.schema import check_config  # imports pydantic: not at --help time

        check_config(train_config, kind, overrides=list(overrides))  # ${...} are checked in the job

    return check
