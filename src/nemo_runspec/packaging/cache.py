"""Archive cache: ``$NEMOTRON_HOME/cache/packages/<fingerprint>.tar.gz``.

A packager computes a cheap *fingerprint* of its input (for git: commit +
subpath; for code: HEAD + ``git status --porcelain=v2`` + content hashes of the
dirty files). If ``<fingerprint>.tar.gz`` and its ``<fingerprint>.json`` plan
exist, the archive is reused; otherwise it is built and stored. Entries are
written atomically and the oldest are pruned beyond :data:`MAX_ENTRIES`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nemo_runspec.packaging.manifest import FORMAT_VERSION, FileEntry, LazyFileList, PackagingPlan
from nemo_runspec.paths import nemotron_home
from nemo_runspec.runtime.stale import sweep

logger = logging.getLogger(__name__)

#: How many archives the cache keeps (least recently used are removed first).
MAX_ENTRIES = 24


def cache_dir(override: str | Path | None = None) -> Path:
    """The package cache directory.

    ``override``, else :func:`packages_dir` of the discovered env.toml's
    ``[cache]`` section.
    """
    if override:
        return Path(override).expanduser()
    return packages_dir(_discovered_cache_section())


def index_dir(override: str | Path | None = None) -> Path:
    """Where ``git status`` keeps its private copies of repositories' indexes:
    ``<cache dir>/git-index`` (see :func:`nemo_runspec.packaging.git.private_index`)."""
    return cache_dir(override) / "git-index"


#: seconds after which git's own lock next to a private index copy is taken for a killed git's
#: (a ``git status`` holds it for well under a second; only this cache's copies are touched)
GIT_LOCK_STALE_S = 60.0


def clear_stale_git_lock(index: Path) -> bool:
    """Remove ``<index>.lock`` when it is older than :data:`GIT_LOCK_STALE_S`: a ``git status``
    killed while it refreshed the private copy left it, and git, which writes no pid into
    it, would skip saving the copy (and its untracked cache) from then on. Says so in one
    line; True when it removed one."""
    lock = index.with_name(index.name + ".lock")
    try:
        age = time.time() - lock.stat().st_mtime
    except OSError:
        return False
    if age < GIT_LOCK_STALE_S:
        return False
    lock.unlink(missing_ok=True)
    import sys

    print(f"note: took over the git lock {lock}: a git status killed {age:.0f}s ago left it", file=sys.stderr)
    return True


def packages_dir(cache_section: Mapping[str, Any] | None) -> Path:
    """``<dir>/packages`` for a ``[cache]`` section with ``dir``, else
    ``$NEMOTRON_HOME/cache/packages``."""
    configured = (cache_section or {}).get("dir")
    if configured:
        return Path(configured).expanduser() / "packages"
    return nemotron_home() / "cache" / "packages"


def _discovered_cache_section() -> Mapping[str, Any]:
    try:
        from nemo_runspec.env import get_cache_config

        return get_cache_config()
    except Exception:  # noqa: BLE001 - a broken env.toml is reported where profiles load
        return {}


def fingerprint(*parts: str | bytes) -> str:
    """sha256 over the given parts (and the archive format version)."""
    h = hashlib.sha256(f"nemotron-package-v{FORMAT_VERSION}\0".encode())
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\0")
    return h.hexdigest()


#: Plans listing more files than this keep the list in ``<fp>.files`` (read lazily).
SIDECAR_MIN_FILES = 256
_SIDECAR_KEY = "files_sidecar_size"


def lookup(fp: str, directory: Path) -> PackagingPlan | None:
    """The cached plan for ``fp`` when its archive is present and intact-looking.

    A large file list lives in ``<fp>.files`` and is decoded only when the
    plan's ``files`` are used (see :class:`LazyFileList`).
    """
    archive = directory / f"{fp}.tar.gz"
    meta = directory / f"{fp}.json"
    sidecar = directory / f"{fp}.files"
    try:
        data = json.loads(meta.read_text())
        plan = PackagingPlan.from_dict(data)
        st = archive.stat()
        if _SIDECAR_KEY in data and sidecar.stat().st_size != data[_SIDECAR_KEY]:
            return None
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    if plan.archive_size != st.st_size or plan.format_version != FORMAT_VERSION:
        return None
    if _SIDECAR_KEY in data:
        plan.files = LazyFileList(loader=lambda: _read_sidecar(sidecar, archive))
    try:
        os.utime(meta)  # mark as recently used
    except OSError:
        pass
    plan.archive_path = str(archive)
    return plan


def store_meta(fp: str, directory: Path, plan: PackagingPlan) -> None:
    """Record the plan of a freshly built ``<fp>.tar.gz`` (atomic), then prune.

    A list of more than :data:`SIDECAR_MIN_FILES` files goes to ``<fp>.files``
    (columns, written before the plan so a plan never points at a missing list).
    """
    meta = directory / f"{fp}.json"
    data = plan.to_dict()
    files = data.pop("files") if len(plan.files) > SIDECAR_MIN_FILES else None
    if files is not None:
        columns = {k: [f[k] for f in files] for k in ("path", "sha256", "size", "mode")}
        blob = json.dumps(columns, separators=(",", ":")).encode()
        _write_atomic(directory / f"{fp}.files", blob)
        data["files"] = []
        data[_SIDECAR_KEY] = len(blob)
    else:
        (directory / f"{fp}.files").unlink(missing_ok=True)
    _write_atomic(meta, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode())
    prune(directory)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _read_sidecar(sidecar: Path, archive: Path) -> list[FileEntry]:
    """The file list in ``sidecar``; rebuilt from the archive itself if it is unreadable."""
    try:
        c = json.loads(sidecar.read_bytes())
        return list(map(FileEntry, c["path"], c["sha256"], c["size"], c["mode"]))
    except (OSError, ValueError, TypeError, KeyError):
        logger.warning("package cache file list %s is unreadable; re-reading %s", sidecar, archive)
    import tarfile

    out = []
    with tarfile.open(archive, "r:gz") as tar:
        for info in tar:
            if info.isfile():
                f = tar.extractfile(info)
                out.append(FileEntry(info.name, hashlib.sha256(f.read() if f else b"").hexdigest(), info.size, info.mode))
    return out


def prune(directory: Path, keep: int = MAX_ENTRIES) -> None:
    """Drop the least recently used entries beyond ``keep``."""
    try:
        metas = sorted(directory.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for meta in metas[keep:]:
        for suffix in (".json", ".tar.gz", ".diff", ".files"):
            meta.with_name(meta.name[: -len(".json")] + suffix).unlink(missing_ok=True)


def place(src: Path, dst: Path) -> None:
    """Put ``src`` at ``dst``: a hard link when possible, else a copy (atomic either way)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(src, tmp)
    except OSError:
        shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def build_cached(
    fp: str,
    out_path: Path,
    build,
    *,
    use_cache: bool = True,
    directory: str | Path | None = None,
) -> PackagingPlan:
    """Return the plan for ``fp``, building the archive only on a cache miss.

    ``build(target: Path) -> PackagingPlan`` writes the archive to ``target``
    and returns its plan (with ``archive_sha256``/``archive_size`` set). The
    result always ends up at ``out_path``; ``plan.cached`` tells whether the
    cache served it.
    """
    out_path = Path(out_path)
    if not use_cache:
        plan = build(out_path)
        plan.fingerprint = fp
        plan.archive_path = str(out_path)
        return plan
    d = cache_dir(directory)
    d.mkdir(parents=True, exist_ok=True)
    sweep(d.glob(".*.tmp"))  # archives half-written by a run that was killed
    hit = lookup(fp, d)
    if hit is not None:
        place(Path(hit.archive_path or ""), out_path)
        diff = d / f"{fp}.diff"
        if hit.diff_path and diff.exists():
            place(diff, diff_path_for(out_path))
            hit.diff_path = str(diff_path_for(out_path))
        else:
            hit.diff_path = None
        hit.cached = True
        hit.archive_path = str(out_path)
        return hit
    target = d / f"{fp}.tar.gz"
    plan = build(target)
    plan.fingerprint = fp
    plan.archive_path = str(target)
    cache_diff = d / f"{fp}.diff"
    if plan.diff_path:
        if Path(plan.diff_path) != cache_diff:
            place(Path(plan.diff_path), cache_diff)
        plan.diff_path = str(cache_diff)
    else:
        cache_diff.unlink(missing_ok=True)
    store_meta(fp, d, plan)
    place(target, out_path)
    plan.archive_path = str(out_path)
    if plan.diff_path:
        out_diff = diff_path_for(out_path)
        place(cache_diff, out_diff)
        plan.diff_path = str(out_diff)
    plan.cached = False
    return plan


def diff_path_for(out_path: Path) -> Path:
    """``<job_dir>/<name>.diff`` next to ``<job_dir>/<name>.tar.gz``."""
    return out_path.with_name(out_path.name.removesuffix(".tar.gz") + ".diff")
