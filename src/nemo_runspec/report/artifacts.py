"""Which artifact version a job consumed, linked: the reference its config named, resolved as of its start.

A config names ``run.data: nano3-pretrain-data-tiny:latest``; the job resolved it
when it started, and ``latest`` may have moved since. So ``latest`` is read as the
newest version created before the job started (the registry records each
version's creation time); an exact version (``:v3``) is itself; any other alias is
resolved as it is now, and says so. Only a file registry is asked (a W&B one would
mean network for a page that needs none): the links stay references otherwise.
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Iterable

from nemo_runspec.report.model import ArtifactLink


def _created(stamp: str) -> float | None:
    try:
        return float(calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")))
    except (ValueError, TypeError):
        return None


def _registry(env_file: str | None) -> object:
    """The registry the job used: its env.toml's (``$NEMOTRON_ARTIFACTS_ROOT`` first), else this one's."""
    from nemo_runspec.artifacts.registry import get_registry, registry_for

    if env_file:
        from pathlib import Path

        from nemo_runspec.env import load_env_file, read_sections

        return registry_for(read_sections(load_env_file(Path(env_file))))
    return get_registry()


def resolve_consumed(links: Iterable[ArtifactLink], started: float | None, *,
                     env_file: str | None = None) -> list[str]:
    """Fill each link's ``path`` (and the exact version in ``ref``) from the registry of the
    job's env.toml (``env_file``); return notes for what could not be resolved."""
    from nemo_runspec.artifacts.refs import parse_ref

    links = list(links)
    if not links:
        return []
    notes = []
    try:
        registry = _registry(env_file)
    except Exception as exc:  # noqa: BLE001 - no registry here: the references stay as written
        return [f"artifact registry not readable here ({str(exc).splitlines()[0]}): consumed artifacts "
                "are shown as named"]
    if type(registry.backend).__name__ == "WandbBackend":  # type: ignore[attr-defined]
        return []
    for link in links:
        try:
            name, selector = parse_ref(link.ref)
            if selector == "latest" and started is not None:
                versions = [a for a in registry.versions(name)  # type: ignore[attr-defined]
                            if (_created(a.created) or 0.0) <= started + 1]
                if not versions:
                    raise LookupError(f"no version of {name} before the job started")
                art, how = versions[-1], "latest when the job started"
            else:
                art = registry.resolve(link.ref)  # type: ignore[attr-defined]
                how = "exact" if selector.lstrip("v").isdigit() else f"{selector} now"
        except Exception as exc:  # noqa: BLE001 - a missing artifact is a note, not a failed report
            notes.append(f"consumed artifact {link.ref} not resolved: {str(exc).splitlines()[0]}")
            continue
        link.ref, link.path = f"{link.ref} = {art.ref} ({how})", art.path
    return notes
