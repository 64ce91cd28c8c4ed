"""How code gets to the cluster: packagers with provenance, caching and progress.

``import nemo_runspec.packaging`` is cheap: nemo_run is imported only when a
nemo-run packager is built (:func:`build_packager`). The archive builders
(``package_git``, ``package_code``, ``package_pattern``,
``package_self_contained``) work without nemo_run and return a
:class:`PackagingPlan`.

Typical use in a CLI command::

    from nemo_runspec.packaging import build_packager, console_progress

    packager, plan = build_packager(env.values, runspec=SPEC, script_path=SPEC.script_path,
                                    progress=console_progress())
    executor = create_executor(..., packager=packager)
    ...  # after nemo-run packaged the job:
    plan.write_json(job_dir / "packaging.json")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nemo_runspec._lazy import lazy_exports

__all__ = [
    "CodePackager",
    "FileEntry",
    "KINDS",
    "PackagingPlan",
    "ProgressEvent",
    "RunspecGitPackager",
    "RunspecHybridPackager",
    "RunspecPatternPackager",
    "SelfContainedPackager",
    "build_packager",
    "cache_dir",
    "console_progress",
    "default_packager_kind",
    "find_repo_root",
    "package_code",
    "package_git",
    "package_pattern",
    "package_self_contained",
    "project_imports",
]

if TYPE_CHECKING:
    from nemo_runspec.packaging._nemo_run import (
        CodePackager,
        RunspecGitPackager,
        RunspecHybridPackager,
        RunspecPatternPackager,
        SelfContainedPackager,
    )
    from nemo_runspec.packaging.cache import cache_dir
    from nemo_runspec.packaging.code import package_code
    from nemo_runspec.packaging.git import find_repo_root, package_git
    from nemo_runspec.packaging.manifest import FileEntry, PackagingPlan
    from nemo_runspec.packaging.pattern import package_pattern
    from nemo_runspec.packaging.progress import ProgressEvent, console_progress
    from nemo_runspec.packaging.select import KINDS, build_packager, default_packager_kind
    from nemo_runspec.packaging.self_contained import package_self_contained, project_imports


__getattr__, __dir__ = lazy_exports(__name__, {
    "manifest": ["PackagingPlan", "FileEntry"],
    "progress": ["ProgressEvent", "console_progress"],
    "select": ["build_packager", "default_packager_kind", "KINDS"],
    "git": ["package_git", "find_repo_root"],
    "code": ["package_code"],
    "pattern": ["package_pattern"],
    "self_contained": ["package_self_contained", "project_imports"],
    "cache": ["cache_dir"],
    # nemo-run packager classes (importing these imports nemo_run)
    "_nemo_run": ["CodePackager", "SelfContainedPackager", "RunspecGitPackager",
                  "RunspecPatternPackager", "RunspecHybridPackager"],
})
