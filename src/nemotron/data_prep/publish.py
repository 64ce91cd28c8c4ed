"""Publish a finished data-prep output dir to the artifact registry (if available)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any


def publish_output(cfg: dict[str, Any], out_dir: str | Path, summary: dict[str, Any]) -> Any:
    """Publish ``out_dir`` as artifact ``cfg["publish"]["name"]`` with ``summary`` as metadata.

    No-op when ``publish.name`` is unset. When ``nemo_runspec.artifact_registry`` is
    not importable, prints a note and returns None. Returns whatever
    ``ArtifactRegistry.publish`` returns otherwise.
    """
    pub = cfg.get("publish") or {}
    name = pub.get("name") if isinstance(pub, dict) else None
    if not name:
        return None
    try:
        mod = importlib.import_module("nemo_runspec.artifact_registry")
    except ImportError:
        print(f"note: not publishing {name!r}: nemo_runspec.artifact_registry is not available")
        return None
    registry_cls = mod.ArtifactRegistry
    registry = registry_cls.from_config() if hasattr(registry_cls, "from_config") else registry_cls()
    aliases = tuple(pub.get("aliases") or ("latest",))
    result = registry.publish(name, Path(out_dir), metadata=summary, aliases=aliases, copy=bool(pub.get("copy", False)))
    print(f"published {name} ({', '.join(aliases)})")
    return result
