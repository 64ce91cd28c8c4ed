"""The ``code`` packager: the working tree as git sees it.

Ships tracked files with their *working-tree* content (uncommitted edits
included) plus untracked files that are not ignored
(``git ls-files --cached --others --exclude-standard``); tracked files deleted
from the work tree are skipped; checked-out submodules are walked the same way.
The archive is deterministic (sorted entries, fixed metadata, gzip level 1),
so identical trees give identical archives and sha256s.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from nemo_runspec.errors import PackagingError
from nemo_runspec.packaging import cache as _cache
from nemo_runspec.packaging._archive import (
    DeterministicTar,
    Ticker,
    check_utf8_name,
    raise_not_regular,
)
from nemo_runspec.packaging.git import (
    _norm_subpath,
    _script_in_archive,
    diff_summary,
    git_status,
    run_git,
    write_diff,
)
from nemo_runspec.packaging.manifest import PackagingPlan
from nemo_runspec.packaging.progress import ProgressCallback


def list_worktree_files(root: Path, pathspec: str | None = None) -> list[tuple[str, Path]]:
    """(path relative to ``root``, absolute path) of every file git would see, sorted.

    Tracked files present in the work tree, untracked-not-ignored files, and the
    same recursively for checked-out submodules.
    """
    spec = ["--", pathspec] if pathspec else []
    cached = run_git(["ls-files", "-z", "-s", "--cached", *spec], root)
    others = run_git(["ls-files", "-z", "--others", "--exclude-standard", *spec], root)
    files: dict[str, Path] = {}
    for rec in cached.split(b"\0"):
        if not rec:
            continue
        meta, rel = rec.decode("utf-8", "surrogateescape").split("\t", 1)
        mode = meta.split()[0]
        absolute = root / rel
        if mode == "160000":
            if (absolute / ".git").exists():
                for sub_rel, sub_abs in list_worktree_files(absolute):
                    files[f"{rel}/{sub_rel}"] = sub_abs
            continue
        if os.path.lexists(absolute) and not absolute.is_dir():
            files[rel] = absolute
    for rec in others.split(b"\0"):
        rel = rec.decode("utf-8", "surrogateescape")
        if rel and not rel.endswith("/") and not os.path.isdir(root / rel):
            files[rel] = root / rel
    return sorted(files.items())


def code_fingerprint(root: Path, sub: str, index_dir: Path | None = None) -> tuple[str, object]:
    """Cheap fingerprint of the work tree: HEAD, status, and stat of every dirty path.

    Tracked, unchanged files are pinned by HEAD (and the index hashes in the
    status lines); anything modified or untracked is pinned by its size, mtime
    and ctime in nanoseconds. Dirty submodules are fingerprinted recursively.
    ``index_dir``: where git status keeps its private index copies
    (:func:`nemo_runspec.packaging.git.private_index`).
    """
    status = git_status(root, sub or None, index_dir=index_dir)
    parts: list[str | bytes] = ["code", sub, status.head or "(initial)", status.raw]
    for e in status.entries:
        p = root / e.path
        check_utf8_name(e.path, p)
        if e.is_submodule and (p / ".git").exists():
            parts.append(f"sub:{e.path}:{code_fingerprint(p, '', index_dir)[0]}")
            continue
        try:
            st = os.lstat(p)
            parts.append(f"{e.path}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}:{st.st_mode}")
        except FileNotFoundError:
            parts.append(f"{e.path}:deleted")
    return _cache.fingerprint(*parts), status


def package_code(
    repo_root: str | Path,
    out_path: str | Path,
    *,
    subpath: str | None = None,
    script_path: str | Path | None = None,
    use_cache: bool = True,
    cache_dir: str | Path | None = None,
    progress: ProgressCallback | None = None,
) -> PackagingPlan:
    """Archive the working tree of ``repo_root`` (or its ``subpath``) to ``out_path``.

    Uncommitted edits and untracked-but-not-ignored files are included; the
    ``git diff HEAD`` is saved next to the archive (``<name>.diff``) and its
    per-file summary is in the plan.
    """
    t0 = time.perf_counter()
    root = Path(repo_root).resolve()
    out_path = Path(out_path)
    sub = _norm_subpath(subpath)
    if sub and not (root / sub).is_dir():
        raise PackagingError(f"packager_subpath {sub!r} is not a directory in {root}", key="packager_subpath")
    script_rel = _script_in_archive(root, sub, Path(script_path)) if script_path is not None else None
    fp, status = code_fingerprint(root, sub, _cache.index_dir(cache_dir) if use_cache else None)
    changed = sorted({e.path for e in status.changed})
    untracked = status.untracked

    def build(target: Path) -> PackagingPlan:
        files = list_worktree_files(root, sub or None)
        total = 0
        special: list[tuple[str, int]] = []
        for _, p in files:
            try:
                st = os.lstat(p)
            except OSError:
                continue
            total += st.st_size
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                special.append((str(p), st.st_mode))
        if special:  # named all at once, before any archive work
            raise_not_regular(special)
        ticker = Ticker(progress, "packaging code", total_files=len(files), total_bytes=total)
        prefix = f"{sub}/" if sub else ""
        with DeterministicTar(target, ticker=ticker) as tar:
            for rel, absolute in files:
                tar.add_path(rel[len(prefix):] if prefix and rel.startswith(prefix) else rel, absolute)
        ticker.finish()
        plan = PackagingPlan(
            kind="code", files=tar.entries, file_count=len(tar.entries),
            archive_sha256=tar.sha256, archive_size=tar.size,
        )
        if status.head is not None and changed:
            res = write_diff(root, _cache.diff_path_for(target), sub or None)
            if res:
                plan.diff_path, plan.diff_sha256 = res
            plan.diff_summary = diff_summary(root, sub or None)
        return plan

    plan = _cache.build_cached(fp, out_path, build, use_cache=use_cache, directory=cache_dir)
    plan.kind = "code"
    plan.repo_root = str(root)
    plan.subpath = sub or None
    plan.script = script_rel
    plan.commit = status.head
    plan.branch = status.branch
    plan.dirty = bool(changed or untracked)
    plan.untracked = untracked
    plan.seconds = round(time.perf_counter() - t0, 4)
    return plan
