"""Publish a finished data-prep output dir to the artifact registry.

The registry is :func:`nemo_runspec.artifacts.registry.get_registry`, so the
destination follows one rule everywhere: :func:`set_registry`, else
``$NEMOTRON_ARTIFACTS_ROOT`` (set by the launcher when the data prep runs as a
Slurm job, so the job publishes where the submitting machine will look), else
the ``[artifacts]`` section of the discovered env.toml, else
``$NEMOTRON_HOME/artifacts``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nemo_runspec.ranks import global_rank


def publish_output(cfg: dict[str, Any], out_dir: str | Path, summary: dict[str, Any]) -> Any:
    """Publish ``out_dir`` as artifact ``cfg["publish"]["name"]`` with ``summary`` as metadata.

    ``publish.aliases`` (default ``["latest"]``) are pointed at the new version;
    ``publish.copy`` copies the payload into the registry instead of recording
    the path. No-op (returns None) when ``publish.name`` is unset or when this
    process is not global rank 0 (only one rank publishes). Returns the
    published :class:`~nemo_runspec.artifacts.registry.Artifact`.
    """
    pub = cfg.get("publish") or {}
    name = pub.get("name") if isinstance(pub, dict) else None
    if not name:
        return None
    rank = global_rank()
    if rank != 0:
        print(f"note: rank {rank} does not publish {name!r} (rank 0 does)")
        return None
    from nemo_runspec.artifacts.registry import get_registry

    registry = get_registry()
    aliases = tuple(pub.get("aliases") or ("latest",))
    art = registry.publish(name, Path(out_dir), metadata=summary, aliases=aliases,
                           copy=bool(pub.get("copy", False)))
    print(f"published {art.ref} ({', '.join(aliases)}) -> {art.path}  [registry: {registry.location}]")
    return art
