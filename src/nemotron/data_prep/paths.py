"""Path resolution for data-prep configs: ``pkg:`` paths, ``~``, and a ``data_root`` base.

``pkg:nemotron/recipes/nano3/sample_data`` names a directory inside an installed
Python package, so shipped configs work from any current directory.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from nemo_runspec.errors import ConfigError


def is_url(path: str) -> bool:
    """True for fsspec URLs such as ``s3://bucket/x`` (but not ``pkg:`` or Windows drives)."""
    return "://" in path and not path.startswith("file://")


def resolve_pkg(path: str) -> str:
    """Turn ``pkg:<package>/<rest>`` into an absolute filesystem path."""
    rest = path[len("pkg:") :].lstrip("/")
    pkg, _, sub = rest.partition("/")
    spec = importlib.util.find_spec(pkg)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"package {pkg!r} in {path!r} is not importable")
    root = Path(list(spec.submodule_search_locations)[0])
    return str(root / sub) if sub else str(root)


def resolve_path(path: str, base: str | None = None) -> str:
    """Resolve a configured path: ``pkg:`` and ``~`` expanded, relative paths joined to ``base``.

    URLs are returned unchanged. ``base`` may itself be a ``pkg:`` path or a URL.
    """
    path = str(path)
    if path.startswith("file://"):
        path = path[len("file://") :]
    if is_url(path):
        return path
    if path.startswith("pkg:"):
        return resolve_pkg(path)
    path = os.path.expanduser(path)
    if os.path.isabs(path) or not base:
        return os.path.abspath(path)
    base_resolved = resolve_path(base)
    if is_url(base_resolved):
        return base_resolved.rstrip("/") + "/" + path
    return os.path.abspath(os.path.join(base_resolved, path))
