"""Artifact references and records: ``name[:version|alias]``, :class:`Artifact`, the backend protocol."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from nemo_runspec.artifacts.errors import ArtifactError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
ALIAS_RE = re.compile(r"^[A-Za-z][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class Artifact:
    """One published version of a named artifact."""

    name: str
    version: int
    """1, 2, ...; 0 for a W&B publish in offline mode (W&B numbers it when the run is synced)."""
    path: str
    """Where the payload lives: a local path or an fsspec URL."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    created: str = ""
    backend: str = "fsspec"

    @property
    def ref(self) -> str:
        """``name:vN``, a reference that always resolves to this exact version."""
        return f"{self.name}:v{self.version}"

    def to_dict(self) -> dict[str, Any]:
        """Plain data, with ``ref`` added."""
        d = asdict(self)
        d["metadata"] = dict(self.metadata)
        d["aliases"] = list(self.aliases)
        d["ref"] = self.ref
        return d


def parse_ref(ref: str) -> tuple[str, str]:
    """Split ``name[:version|alias]`` into ``(name, selector)``; selector defaults to ``latest``.

    Accepted selectors: ``latest`` or another alias, ``3``, ``v3``.
    """
    ref = ref.strip()
    if ref.startswith("art://"):
        ref = ref[len("art://") :].split("/", 1)[0]
    name, _, selector = ref.partition(":")
    if not name or not NAME_RE.match(name):
        raise ArtifactError(
            f"invalid artifact reference {ref!r}",
            hint="use name[:version|alias], e.g. nano3-pretrain-data-tiny:latest or :v3",
        )
    return name, (selector or "latest")


def version_number(selector: str) -> int | None:
    """``3`` for ``3``, ``v3`` or ``V3``; None for an alias."""
    s = selector[1:] if selector[:1] in ("v", "V") else selector
    return int(s) if s.isdigit() else None


class Backend(Protocol):
    """Storage behind an :class:`ArtifactRegistry`."""

    def publish(self, name: str, source: str | None, *, metadata: Mapping[str, Any],
                aliases: Iterable[str], copy: bool) -> Artifact:
        """Register ``source`` as the next version of ``name`` (``latest`` and ``aliases`` move to it)."""

    def get(self, name: str, selector: str) -> Artifact:
        """The version of ``name`` that ``selector`` (``latest``, ``v3``, ``3``, an alias) names."""

    def names(self) -> list[str]:
        """Every artifact name in the registry."""

    def versions(self, name: str) -> list[Artifact]:
        """Every version of ``name``, oldest first."""

    def set_alias(self, name: str, alias: str, version: int) -> None:
        """Point ``alias`` of ``name`` at ``version``."""
