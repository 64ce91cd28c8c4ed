"""What was packaged: the JSON-serialisable provenance record of one archive.

Every packager fills a :class:`PackagingPlan`. Before packaging it says what
*will* be packaged (kind, repo, subpath, script location in the archive); after
``package()`` it also records what *was* packaged (commit, dirty flag, diff,
files with sha256, archive path/sha256/size, seconds, cache hit).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

#: Bumped when the archive layout or fingerprint recipe changes (invalidates caches).
FORMAT_VERSION = 1


@dataclass
class FileEntry:
    """One file in an archive."""

    path: str
    sha256: str
    size: int
    mode: int = 0o644


class LazyFileList(list):
    """A ``list[FileEntry]`` filled by ``loader()`` the first time it is used.

    A warm cache hit of a 30,000-file archive would otherwise spend ~50 ms
    decoding a file list the caller may never look at. Every list operation
    (and ``json``/``dataclasses.asdict`` through iteration) loads it first.
    """

    __slots__ = ("_loader",)

    def __init__(self, items=(), loader=None):
        super().__init__(items)
        self._loader = loader

    def _load(self) -> LazyFileList:
        loader, self._loader = self._loader, None
        if loader is not None:
            list.extend(self, loader())
        return self

    def __reduce_ex__(self, protocol):
        return (list, (list(self._load()),))

    def __deepcopy__(self, memo):
        import copy

        return [copy.deepcopy(x, memo) for x in self._load()]

    def __copy__(self):
        return list(self._load())


def _lazy(name):
    base = getattr(list, name)

    def method(self, *args, **kwargs):
        return base(self._load(), *args, **kwargs)

    method.__name__ = name
    return method


for _name in (
    "__iter__", "__len__", "__getitem__", "__setitem__", "__delitem__", "__contains__", "__bool__",
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__repr__", "__reversed__", "__add__",
    "__radd__", "__iadd__", "__mul__", "__rmul__", "__imul__", "append", "extend", "insert", "pop",
    "remove", "index", "count", "sort", "reverse", "copy", "clear",
):
    if hasattr(list, _name):
        setattr(LazyFileList, _name, _lazy(_name))
LazyFileList.__bool__ = lambda self: len(self) > 0  # list has no __bool__; truth uses __len__
LazyFileList.__hash__ = None  # type: ignore[assignment]


@dataclass
class PackagingPlan:
    """Provenance of one packaging step (also the plan before it runs).

    ``kind`` is one of ``git``, ``code``, ``pattern``, ``hybrid``, ``none``,
    ``self_contained``. ``script`` is the recipe script's path *inside* the
    extracted archive (``None`` when it is not in the archive). ``parts`` holds
    the sub-plans of a hybrid packager, keyed by the folder they extract under.
    """

    kind: str
    reason: str = ""
    repo_root: str | None = None
    subpath: str | None = None
    script: str | None = None
    workdir: str | None = None
    commit: str | None = None
    tree: str | None = None
    branch: str | None = None
    dirty: bool | None = None
    diff_summary: list[dict[str, Any]] = field(default_factory=list)
    untracked: list[str] = field(default_factory=list)
    #: git packager: uncommitted files shipped because packager_include_pattern matched
    #: them (``{"path": archive name, "sha256": ..., "source": working-tree file}``)
    extra_files: list[dict[str, Any]] = field(default_factory=list)
    diff_path: str | None = None
    diff_sha256: str | None = None
    files: list[FileEntry] = field(default_factory=list)
    file_count: int = 0
    archive_path: str | None = None
    archive_sha256: str | None = None
    archive_size: int | None = None
    seconds: float | None = None
    cached: bool = False
    fingerprint: str | None = None
    warnings: list[str] = field(default_factory=list)
    parts: dict[str, PackagingPlan] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION

    def __deepcopy__(self, memo: dict) -> PackagingPlan:
        # A plan is a shared result sink: copies of a packager (nemo-run clones
        # executors) must keep filling the same record the caller holds.
        return self

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict (parts and files expanded)."""
        return asdict(self)

    def to_json(self, *, indent: int | None = 2) -> str:
        """JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True)

    def write_json(self, path: str | Path) -> Path:
        """Write the plan as JSON (e.g. ``<job_dir>/packaging.json``); returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(self.to_json() + "\n")
        tmp.replace(path)
        return path

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PackagingPlan:
        """Inverse of :meth:`to_dict` (unknown keys are ignored)."""
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        kwargs["files"] = [FileEntry(**f) for f in kwargs.get("files", [])]
        kwargs["parts"] = {k: cls.from_dict(v) for k, v in kwargs.get("parts", {}).items()}
        return cls(**kwargs)

    def update_from(self, other: PackagingPlan) -> None:
        """Copy every field of ``other`` into this plan (in place)."""
        for f in fields(self):
            setattr(self, f.name, getattr(other, f.name))
