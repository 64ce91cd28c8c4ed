"""The ``pattern`` packager: files matching glob patterns, relative to a base dir.

Patterns are relative to ``packager_relative_path`` (itself relative to the
repo root) or absolute; ``**`` matches any depth and a matched directory brings
all files under it (like nemo-run's ``find <pattern> -type f``). A pattern that
matches nothing is an error, not a silently smaller archive.
"""

from __future__ import annotations

import glob
import os
import time
from pathlib import Path

from nemo_runspec.errors import PackagingError
from nemo_runspec.packaging import cache as _cache
from nemo_runspec.packaging._archive import DeterministicTar, Ticker
from nemo_runspec.packaging.manifest import PackagingPlan
from nemo_runspec.packaging.progress import ProgressCallback


def as_pattern_list(value: str | list[str] | tuple[str, ...] | None) -> list[str]:
    """Normalise a ``packager_include_pattern`` value to a list of non-empty patterns."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    return [p for p in (str(i).strip() for i in items) if p]


def match_patterns(patterns: list[str], base: Path) -> list[tuple[str, Path]]:
    """(archive name, absolute path) of every file matched, sorted; errors on empty matches."""
    base = base.resolve()
    found: dict[str, Path] = {}
    for pattern in patterns:
        absolute = pattern if os.path.isabs(pattern) else str(base / pattern)
        hits = glob.glob(absolute, recursive=True, include_hidden=True)
        files: list[Path] = []
        for h in hits:
            hp = Path(h)
            if hp.is_dir():
                files += [Path(d) / f for d, _, fs in os.walk(hp) for f in fs]
            elif hp.exists() or hp.is_symlink():
                files.append(hp)
        if not files:
            raise PackagingError(
                f"include pattern {pattern!r} matches no file under {base}",
                key="packager_include_pattern",
                hint="patterns are relative to packager_relative_path (or the repo root); check the spelling",
            )
        for f in files:
            rel = os.path.relpath(os.path.abspath(f), base)
            if rel.startswith(".."):
                raise PackagingError(
                    f"include pattern {pattern!r} matches {f}, which is outside {base}",
                    key="packager_include_pattern",
                    hint="set packager_relative_path to a directory containing every match",
                )
            found[rel.replace(os.sep, "/")] = Path(os.path.abspath(f))
    return sorted(found.items())


def package_pattern(
    patterns: str | list[str],
    base: str | Path,
    out_path: str | Path,
    *,
    script_path: str | Path | None = None,
    use_cache: bool = True,
    cache_dir: str | Path | None = None,
    progress: ProgressCallback | None = None,
) -> PackagingPlan:
    """Archive the files matching ``patterns`` (names relative to ``base``) to ``out_path``."""
    t0 = time.perf_counter()
    base = Path(base).resolve()
    pats = as_pattern_list(patterns)
    if not pats:
        raise PackagingError(
            'packager = "pattern" needs packager_include_pattern',
            key="packager_include_pattern",
            hint='e.g. packager_include_pattern = ["src/**/*.py"]',
        )
    files = match_patterns(pats, base)
    parts: list[str | bytes] = ["pattern", str(base)]
    for rel, p in files:
        st = os.lstat(p)
        parts.append(f"{rel}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}:{st.st_mode}")
    fp = _cache.fingerprint(*parts)

    def build(target: Path) -> PackagingPlan:
        ticker = Ticker(progress, "packaging files", total_files=len(files))
        with DeterministicTar(target, ticker=ticker) as tar:
            for rel, p in files:
                tar.add_path(rel, p)
        ticker.finish()
        return PackagingPlan(
            kind="pattern", files=tar.entries, file_count=len(tar.entries),
            archive_sha256=tar.sha256, archive_size=tar.size,
        )

    plan = _cache.build_cached(fp, Path(out_path), build, use_cache=use_cache, directory=cache_dir)
    plan.kind = "pattern"
    plan.repo_root = str(base)
    script_rel = None
    if script_path is not None:
        rel = os.path.relpath(Path(script_path).resolve(), base).replace(os.sep, "/")
        script_rel = rel if any(name == rel for name, _ in files) else None
    plan.script = script_rel
    plan.seconds = round(time.perf_counter() - t0, 4)
    return plan
