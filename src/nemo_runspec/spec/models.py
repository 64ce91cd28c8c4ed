"""Frozen dataclasses describing a recipe's ``[tool.runspec]`` metadata (schema v1).

Instances are produced by :func:`nemo_runspec.parse` / :func:`nemo_runspec.parse_text`
after validation, so every field already has the right type. They are immutable
(``frozen=True``; ``env`` is a read-only mapping), hashable, picklable, and safe to
share between callers (``parse`` caches them).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

Launch = Literal["torchrun", "ray", "direct"]

#: Values accepted for ``run.launch`` after normalisation.
LAUNCH_VALUES: tuple[str, ...] = ("torchrun", "ray", "direct")
#: Longest runspec ``name``: it names job directories and Slurm log files (255 bytes each).
NAME_MAX = 128
#: Accepted spellings that are normalised to a canonical ``run.launch`` value.
LAUNCH_SYNONYMS: Mapping[str, str] = MappingProxyType({"python": "direct"})
#: Runspec schema versions this package understands.
SUPPORTED_SCHEMAS: tuple[str, ...] = ("1",)

_EMPTY_ENV: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class RunspecRun:
    """How the script is started: ``[tool.runspec.run]``."""

    launch: Launch = "torchrun"
    cmd: str | None = None
    workdir: str | None = None
    #: shell commands sourced before the command, in its shell (``run.setup``; spec section 7).
    #: The top-level ``setup`` is the reference's human-readable description and never runs.
    setup: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (JSON-serialisable)."""
        return {"launch": self.launch, "cmd": self.cmd, "workdir": self.workdir, "setup": list(self.setup)}

    @property
    def setup_script(self) -> str:
        """``setup`` as one shell script (its commands one per line), ``""`` without any."""
        return "\n".join(self.setup)


@dataclass(frozen=True, slots=True)
class RunspecConfig:
    """Where the recipe's configs live: ``[tool.runspec.config]``."""

    dir: str = "./config"
    default: str = "default"
    format: str = "omegaconf"
    #: True when the runspec names its configs (``config.dir`` or ``config.default``). A
    #: script that names none and has no ``./config`` dir runs with an empty config.
    declared: bool = field(default=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (JSON-serialisable)."""
        return {"dir": self.dir, "default": self.default, "format": self.format}


@dataclass(frozen=True, slots=True)
class RunspecResources:
    """Default resources: ``[tool.runspec.resources]``."""

    nodes: int = 1
    #: ``None`` when the script says ``"gpu"``: every GPU of the node, as the profile states them
    gpus_per_node: int | None = 8

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (JSON-serialisable)."""
        return {"nodes": self.nodes, "gpus_per_node": self.gpus_per_node}


@dataclass(frozen=True, slots=True, kw_only=True)
class Runspec:
    """A recipe script's validated ``[tool.runspec]`` metadata.

    ``script_path`` is absolute; ``config_dir`` is ``config.dir`` resolved against
    the directory of the script file (never the current working directory).
    """

    name: str
    script_path: Path
    schema: str = "1"
    docs: str | None = None
    image: str | None = None
    setup: str | None = None
    run: RunspecRun = field(default_factory=RunspecRun)
    config: RunspecConfig = field(default_factory=RunspecConfig)
    resources: RunspecResources = field(default_factory=RunspecResources)
    env: Mapping[str, str] = field(default_factory=lambda: _EMPTY_ENV, hash=False)
    #: the scale matrix, ``[[tool.runspec.scales]]`` (nemo_runspec.spec.scales.ScaleEntry)
    scales: tuple[Any, ...] = ()
    config_dir: Path = field(init=False)

    def __post_init__(self) -> None:
        script = Path(os.path.abspath(self.script_path))
        object.__setattr__(self, "script_path", script)
        if not isinstance(self.env, MappingProxyType):
            object.__setattr__(self, "env", MappingProxyType(dict(self.env)))
        config_dir = Path(os.path.normpath(script.parent / os.path.expanduser(self.config.dir)))
        object.__setattr__(self, "config_dir", config_dir)

    def __reduce__(self) -> tuple[Any, ...]:
        # MappingProxyType cannot be pickled; rebuild from plain values instead.
        kwargs = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        return (_rebuild_runspec, ({**kwargs, "env": dict(self.env)},))

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form for display and JSON (paths as strings, env as a dict)."""
        return {
            "schema": self.schema,
            "name": self.name,
            "docs": self.docs,
            "image": self.image,
            "setup": self.setup,
            "run": self.run.to_dict(),
            "config": self.config.to_dict(),
            "resources": self.resources.to_dict(),
            "env": dict(self.env),
            "script_path": str(self.script_path),
            "config_dir": str(self.config_dir),
            **({"scales": [e.to_dict() for e in self.scales]} if self.scales else {}),
        }


def _rebuild_runspec(kwargs: dict[str, Any]) -> Runspec:
    return Runspec(**kwargs)
