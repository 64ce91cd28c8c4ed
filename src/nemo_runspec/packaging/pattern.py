"""The ``pattern`` packager: files matching glob patterns, relative to a base dir.

Patterns are relative to ``packager_relative_path`` (itself relative to the
repo root) or absolute; ``**`` matches any depth and a matched directory brings
all files under it (like nemo-run's ``find <pattern> -type f``). A pattern that
matches nothing is an error, not a silently smaller archive.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from nemo_runspec import files as _files
from nemo_runspec.errors import PackagingError
from nemo_runspec.packaging import cache as _cache
from nemo_runspec.packaging._archive import DeterministicTar, Ticker, check_utf8_name
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
    return [(rel, Path(absolute)) for rel, absolute, _ in _match(patterns, base)]


def _match(patterns: list[str], base: Path) -> list[tuple[str, str, os.stat_result | None]]:
    """:func:`match_patterns` with plain-string paths and the ``lstat`` of each file
    when it was taken on the way (None otherwise): one stat per file, no pathlib
    per file (30,000 files: ~1.5 s with them, ~0.15 s without)."""
    base = base.resolve()
    base_s = str(base)
    prefix = base_s.rstrip(os.sep) + os.sep
    found: dict[str, tuple[str, os.stat_result | None]] = {}
    for pattern in patterns:
        absolute = pattern if os.path.isabs(pattern) else os.path.join(base_s, pattern)
        hits = _files.glob(absolute, on_loop=_refuse_loop)
        files: list[tuple[str, os.stat_result | None]] = []
        for h in hits:
            try:
                st = os.lstat(h)
            except OSError:
                continue  # gone since glob listed it
            if stat.S_ISDIR(st.st_mode) or (stat.S_ISLNK(st.st_mode) and os.path.isdir(h)):
                files += [(os.path.join(d, f), None) for d, _, fs in _files.walk(h, on_loop=_refuse_loop)
                          for f in fs]
            else:
                files.append((h, st))
        if not files:
            raise PackagingError(
                f"include pattern {pattern!r} matches no file under {base}",
                key="packager_include_pattern",
                hint="patterns are relative to packager_relative_path (or the repo root); check the spelling",
            )
        for f, st in files:
            a = os.path.abspath(f)
            rel = a[len(prefix):] if a.startswith(prefix) else os.path.relpath(a, base_s)
            check_utf8_name(rel, a)
            if rel.startswith(".."):
                raise PackagingError(
                    f"include pattern {pattern!r} matches {f}, which is outside {base}",
                    key="packager_include_pattern",
                    hint="set packager_relative_path to a directory containing every match",
                )
            found[rel.replace(os.sep, "/") if os.sep != "/" else rel] = (a, st)
    return sorted((rel, a, st) for rel, (a, st) in found.items())


def _refuse_loop(loop: _files.TreeLoop) -> None:
    raise PackagingError(f"include pattern reaches {loop.link}, {loop.words()}",
                         key="packager_include_pattern", hint=loop.hint)


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
    matched = _match(pats, base)
    files = [(rel, a) for rel, a, _ in matched]
    parts: list[str | bytes] = ["pattern", str(base)]
    for rel, a, st in matched:
        if st is None:
            st = os.lstat(a)
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
