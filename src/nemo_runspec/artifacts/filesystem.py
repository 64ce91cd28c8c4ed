"""``art://name:version/path`` as an fsspec protocol.

>>> import fsspec, nemo_runspec.artifacts.filesystem  # registers "art"     # doctest: +SKIP
>>> with fsspec.open("art://nano3-pretrain-data-tiny:latest/blend.json") as f:
...     blend = json.load(f)

The artifact part is resolved through the process-wide registry
(:func:`nemo_runspec.artifacts.registry.get_registry`); the rest of the path is
read from wherever the payload lives, with that location's own filesystem.
"""

from __future__ import annotations

from typing import Any

import fsspec
from fsspec.spec import AbstractFileSystem


class ArtifactFileSystem(AbstractFileSystem):
    """Read-only view of published artifacts, addressed as ``art://ref/path``."""

    protocol = "art"
    root_marker = ""

    def __init__(self, registry=None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._registry = registry

    @property
    def registry(self):
        """The registry ``art://`` paths resolve in: the one given, else the configured one."""
        if self._registry is None:
            from nemo_runspec.artifacts.registry import get_registry

            return get_registry()
        return self._registry

    @classmethod
    def _strip_protocol(cls, path: str) -> str:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = str(path)
        if path.startswith("art://"):
            path = path[len("art://") :]
        return path.rstrip("/")

    def _split(self, path: str) -> tuple[AbstractFileSystem, str, str, str]:
        """``(fs, target, ref, base)``: the payload's filesystem, the path on it, the
        artifact reference and the payload root (the artifact is resolved once)."""
        path = self._strip_protocol(path)
        ref, _, rest = path.partition("/")
        from nemo_runspec.artifacts import pins

        art = pins.resolve(self.registry, ref)  # a pipeline's pins hold here too
        fs, base = fsspec.core.url_to_fs(art.path)
        target = f"{base.rstrip('/')}/{rest}" if rest else base
        return fs, target, ref, base

    def _out(self, ref: str, entry: dict[str, Any], fs_base: str) -> dict[str, Any]:
        name = entry["name"]
        rel = name[len(fs_base.rstrip("/")) :].lstrip("/")
        return {**entry, "name": f"{ref}/{rel}" if rel else ref}

    def ls(self, path: str, detail: bool = True, **kwargs: Any):
        """The entries under ``art://`` ``path`` (dicts with ``detail``, else their names)."""
        fs, target, ref, art_base = self._split(path)
        entries = fs.ls(target, detail=True)
        out = [self._out(ref, e, art_base) for e in entries]
        return out if detail else [e["name"] for e in out]

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        """fsspec's ``info`` of the file ``art://`` ``path`` names."""
        fs, target, ref, art_base = self._split(path)
        return self._out(ref, fs.info(target), art_base)

    def _open(self, path: str, mode: str = "rb", **kwargs: Any):
        if any(c in mode for c in "wa+x"):
            raise PermissionError("art:// is read-only; publish with ArtifactRegistry.publish")
        fs, target, _, _ = self._split(path)
        return fs.open(target, mode, **kwargs)

    def cat_file(self, path: str, start=None, end=None, **kwargs: Any) -> bytes:
        """The bytes of ``art://`` ``path`` (from ``start`` to ``end`` when given)."""
        fs, target, _, _ = self._split(path)
        return fs.cat_file(target, start=start, end=end, **kwargs)


fsspec.register_implementation("art", ArtifactFileSystem, clobber=True)
