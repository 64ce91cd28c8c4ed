"""nemo-run ``Packager`` subclasses wrapping our packagers.

Imported only when a job is built (it imports nemo-run's packager base class,
not all of nemo-run: :mod:`nemo_runspec._nemo_run`). Every class honours
nemo-run's contract ``package(path, job_dir, name) -> <job_dir>/<name>.tar.gz``
so ``SlurmExecutor.package()`` uploads and extracts the archive under
``<job>/code``. ``path`` (nemo-run passes the process cwd) is used only when no
``repo_root`` was configured. After packaging, the registered plan is filled in
and also written to ``<job_dir>/<name>.packaging.json``.
"""

from __future__ import annotations

import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from nemo_runspec._nemo_run import lean

lean()
from nemo_run.core.packaging.base import Packager  # noqa: E402  (after lean())

from nemo_runspec.errors import PackagingError  # noqa: E402
from nemo_runspec.packaging import _registry  # noqa: E402
from nemo_runspec.packaging._archive import DeterministicTar, Ticker  # noqa: E402
from nemo_runspec.packaging.manifest import PackagingPlan  # noqa: E402


def _finish(plan_id: str, result: PackagingPlan, job_dir: str, name: str) -> None:
    plan = _registry.plan_for(plan_id)
    if plan is not None:
        keep = {"reason": plan.reason, "workdir": plan.workdir}
        plan.update_from(result)
        plan.reason = keep["reason"] or plan.reason
        plan.workdir = keep["workdir"] or plan.workdir
        result = plan
    result.write_json(Path(job_dir) / f"{name}.packaging.json")


def _root(repo_root: str, path: Path) -> Path:
    if repo_root:
        return Path(repo_root)
    from nemo_runspec.packaging.git import find_repo_root

    found = find_repo_root(path)
    if found is None:
        raise PackagingError(f"{path} is not inside a git repository", key="packager")
    return found


@dataclass(kw_only=True)
class RunspecGitPackager(Packager):
    """Committed files of ``repo_root`` via ``git archive`` (see ``nemo_runspec.packaging.git``)."""

    repo_root: str = ""
    subpath: str = ""
    check_uncommitted: bool = True
    include_submodules: bool = True
    include_pattern: list[str] = field(default_factory=list)
    script_path: str = ""
    use_cache: bool = True
    cache_dir: str = ""
    plan_id: str = ""

    def package(self, path: Path, job_dir: str, name: str) -> str:
        from nemo_runspec.packaging.git import package_git

        out = Path(job_dir) / f"{name}.tar.gz"
        result = package_git(
            _root(self.repo_root, path), out, subpath=self.subpath,
            check_uncommitted=self.check_uncommitted, include_submodules=self.include_submodules,
            include_pattern=list(self.include_pattern),
            script_path=self.script_path or None, use_cache=self.use_cache,
            cache_dir=self.cache_dir or None, progress=_registry.progress_for(self.plan_id),
        )
        _finish(self.plan_id, result, job_dir, name)
        return str(out)


@dataclass(kw_only=True)
class CodePackager(Packager):
    """The working tree as git sees it, uncommitted edits included (see ``nemo_runspec.packaging.code``)."""

    repo_root: str = ""
    subpath: str = ""
    script_path: str = ""
    use_cache: bool = True
    cache_dir: str = ""
    plan_id: str = ""

    def package(self, path: Path, job_dir: str, name: str) -> str:
        from nemo_runspec.packaging.code import package_code

        out = Path(job_dir) / f"{name}.tar.gz"
        result = package_code(
            _root(self.repo_root, path), out, subpath=self.subpath,
            script_path=self.script_path or None, use_cache=self.use_cache,
            cache_dir=self.cache_dir or None, progress=_registry.progress_for(self.plan_id),
        )
        _finish(self.plan_id, result, job_dir, name)
        return str(out)


@dataclass(kw_only=True)
class RunspecPatternPackager(Packager):
    """Files matching ``include_pattern`` under ``relative_path`` (see ``nemo_runspec.packaging.pattern``)."""

    include_pattern: list[str] = field(default_factory=list)
    relative_path: str = ""
    script_path: str = ""
    use_cache: bool = True
    cache_dir: str = ""
    plan_id: str = ""

    def package(self, path: Path, job_dir: str, name: str) -> str:
        from nemo_runspec.packaging.pattern import package_pattern

        out = Path(job_dir) / f"{name}.tar.gz"
        result = package_pattern(
            self.include_pattern, self.relative_path or path, out,
            script_path=self.script_path or None, use_cache=self.use_cache,
            cache_dir=self.cache_dir or None, progress=_registry.progress_for(self.plan_id),
        )
        _finish(self.plan_id, result, job_dir, name)
        return str(out)


@dataclass(kw_only=True)
class SelfContainedPackager(Packager):
    """Only the recipe script (as ``main.py``) and its config (as ``config.yaml``)."""

    script_path: str = ""
    config_path: str = ""
    repo_root: str = ""
    plan_id: str = ""

    def package(self, path: Path, job_dir: str, name: str) -> str:
        from nemo_runspec.packaging.self_contained import package_self_contained

        out = Path(job_dir) / f"{name}.tar.gz"
        result = package_self_contained(
            self.script_path, out, config_path=self.config_path or None,
            repo_root=self.repo_root or None,
        )
        _finish(self.plan_id, result, job_dir, name)
        return str(out)


@dataclass(kw_only=True)
class RunspecHybridPackager(Packager):
    """Several packagers in one archive, each extracted under its key (``<key>/...``)."""

    sub_packagers: dict[str, Packager] = field(default_factory=dict)
    plan_id: str = ""

    def package(self, path: Path, job_dir: str, name: str) -> str:
        import time

        t0 = time.perf_counter()
        out = Path(job_dir) / f"{name}.tar.gz"
        parts: dict[str, PackagingPlan] = {}
        ticker = Ticker(_registry.progress_for(self.plan_id), "packaging (hybrid)")
        with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=job_dir) as tmp:
            with DeterministicTar(out, ticker=ticker) as tar:
                for key in sorted(self.sub_packagers):
                    sub = self.sub_packagers[key]
                    archive = sub.package(path, tmp, f"{name}_{key}")
                    part = _registry.plan_for(getattr(sub, "plan_id", "")) or PackagingPlan(kind=type(sub).__name__)
                    part.archive_path = None  # the sub-archive was temporary; see the hybrid archive
                    parts[key] = part
                    with tarfile.open(archive, "r:gz") as src:
                        for info in src:
                            fobj = src.extractfile(info) if info.isfile() else None
                            tar.add_member(info, fobj, f"{key}/{info.name.removeprefix('./')}")
        ticker.finish()
        result = PackagingPlan(
            kind="hybrid", parts=parts, files=tar.entries, file_count=len(tar.entries),
            archive_path=str(out), archive_sha256=tar.sha256, archive_size=tar.size,
            dirty=any(bool(p.dirty) for p in parts.values()),
            warnings=[f"{k}: {w}" for k, p in parts.items() for w in p.warnings],
            seconds=round(time.perf_counter() - t0, 4),
        )
        plan = _registry.plan_for(self.plan_id)
        if plan is not None:
            result.script = plan.script
        _finish(self.plan_id, result, job_dir, name)
        return str(out)


def passthrough_packager() -> Packager:
    """nemo-run's base ``Packager()``: nothing is shipped (code is on the cluster or in the image)."""
    return Packager()


__all__ = [
    "CodePackager",
    "RunspecGitPackager",
    "RunspecHybridPackager",
    "RunspecPatternPackager",
    "SelfContainedPackager",
    "passthrough_packager",
]
