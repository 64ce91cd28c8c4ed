"""What a backend declares of env.toml: the keys it reads, those it needs, its own rules.

Every backend class carries one :class:`ProfileKeys` (``profile``); env.toml validation reads
it through the registry (:mod:`nemo_runspec.env.executor_keys`), never by importing a backend.
Standard library only: a backend module imports this at its own import, which must stay cheap
(``nemotron --help``); pydantic is imported where the profile model is built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple


@dataclass(frozen=True)
class Key:
    """One env.toml key a backend reads and the shared profile model does not type.

    Attributes:
        type: the value's type (``str``, ``list[str]``, ``int | float``, ...); unset is
            always allowed. Checked strictly: ``"4"`` is not an integer.
        ge, gt, le: bounds of a number.
        check: a further check of a set value: returns the value or raises ``ValueError``
            whose message is shown at the key (``'1x' is not a size ...``).
        build: builds ``type`` when the profile model is built (a pydantic model of the key's
            tables), so that importing the backend does not import pydantic; ``type`` is then
            unused.
    """

    type: object = None
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    check: Callable[[Any], Any] | None = None
    build: Callable[[], object] | None = None


class KeyProblem(NamedTuple):
    """A broken rule at one key: the key, what is wrong, what to do (None: nothing to add)."""

    key: str
    problem: str
    hint: str | None = None


@dataclass(frozen=True)
class ProfileKeys:
    """What a backend reads of an env.toml profile beyond the keys every backend reads.

    A key some backend reads and this one does not is an error in its profile (``ipc_mode``
    in a Slurm profile), unless both are ``lenient``.

    Attributes:
        keys: its own keys, typed here (key -> :class:`Key`), in the order the profile
            model lists them. A key two backends read is declared by both, alike.
        reads: keys of the shared profile model (:mod:`nemo_runspec.env.model`) that it reads
            and not every backend does (Slurm's ``partition``).
        required: keys a profile of it must set -> an example of the value, shown when missing.
        lenient: keeps the keys of the other lenient backends quietly: a profile without
            ``executor`` runs here, and Slurm keys in it stay as quiet as they always were.
        mount_tables: its ``mounts`` are tables (checked by ``problem``), not the
            ``"src:dst[:flags]"`` strings of the others.
        problem: its rules across keys of a merged profile: the first broken one as one message
            starting with ``KEY = `` (placed at that key's line), or None.
        value_problem: a rule checked after the values' own (``$`` forms, lengths): a
            :class:`KeyProblem`, or None.
    """

    keys: Mapping[str, Key] = field(default_factory=dict)
    reads: tuple[str, ...] = ()
    required: Mapping[str, str] = field(default_factory=dict)
    lenient: bool = False
    mount_tables: bool = False
    problem: Callable[[Mapping[str, Any]], str | None] | None = None
    value_problem: Callable[[Mapping[str, Any]], KeyProblem | None] | None = None

    def read(self) -> tuple[str, ...]:
        """Every key it reads that not every backend does: ``reads``, then ``keys``."""
        return (*self.reads, *(k for k in self.keys if k not in self.reads))
