"""Publish a finished data-prep output dir to the artifact registry.

The registry is :func:`nemo_runspec.artifacts.registry.get_registry`, so the
destination follows one rule everywhere: :func:`set_registry`, else
``$NEMOTRON_ARTIFACTS_ROOT`` (set by the launcher when the data prep runs as a
Slurm job, so the job publishes where the submitting machine will look), else
the ``[artifacts]`` section of the discovered env.toml, else
``$NEMOTRON_HOME/artifacts``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nemo_runspec.runtime.ranks import global_rank


def publish_output(cfg: Mapping[str, Any] | Any, out_dir: str | Path, summary: dict[str, Any]) -> Any:
    """Publish ``out_dir`` as artifact ``publish.name`` with ``summary`` as metadata.

    ``cfg`` is a data-prep config (a mapping, its ``publish:`` section checked
    against :class:`~nemotron.data_prep.schema.Publish`) or already validated
    settings. ``publish.aliases`` (default ``["latest"]``) are pointed at the
    new version; ``publish.copy`` copies the payload into the registry instead
    of recording the path. No-op (returns None) when ``publish.name`` is unset
    or when this process is not global rank 0 (only one rank publishes).
    Returns the published :class:`~nemo_runspec.artifacts.registry.Artifact`.
    """
    pub = _publish_settings(cfg)
    name = pub.name
    if not name:
        return None
    rank = global_rank()
    if rank != 0:
        print(f"note: rank {rank} does not publish {name!r} (rank 0 does)")
        return None
    from nemo_runspec.artifacts.registry import get_registry

    registry = get_registry()
    aliases = tuple(pub.aliases)
    art = registry.publish(name, Path(out_dir), metadata=summary, aliases=aliases, copy=pub.copy_)
    print(f"published {art.ref} ({', '.join(aliases)}) -> {art.path}  [registry: {registry.location}]")
    return art


def will_publish(cfg: Mapping[str, Any] | Any) -> bool:
    """True when :func:`publish_output` would publish (``publish.name`` set, global rank 0)."""
    return bool(_publish_settings(cfg).name) and global_rank() == 0


def _publish_settings(cfg: Mapping[str, Any] | Any) -> Any:
    """The checked ``publish:`` settings of ``cfg`` (a config mapping or validated settings)."""
    if not isinstance(cfg, Mapping):
        return cfg.publish
    from .schema import Publish
    from .validation import check_section

    section = cfg.get("publish")
    return check_section(Publish, {} if section is None else section, "publish")
