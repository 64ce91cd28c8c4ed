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

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "PackagingPlan": "nemo_runspec.packaging.manifest",
    "FileEntry": "nemo_runspec.packaging.manifest",
    "ProgressEvent": "nemo_runspec.packaging.progress",
    "console_progress": "nemo_runspec.packaging.progress",
    "build_packager": "nemo_runspec.packaging.select",
    "default_packager_kind": "nemo_runspec.packaging.select",
    "KINDS": "nemo_runspec.packaging.select",
    "package_git": "nemo_runspec.packaging.git",
    "find_repo_root": "nemo_runspec.packaging.git",
    "package_code": "nemo_runspec.packaging.code",
    "package_pattern": "nemo_runspec.packaging.pattern",
    "package_self_contained": "nemo_runspec.packaging.self_contained",
    "project_imports": "nemo_runspec.packaging.self_contained",
    "cache_dir": "nemo_runspec.packaging.cache",
    # nemo-run packager classes (importing these imports nemo_run)
    "CodePackager": "nemo_runspec.packaging._nemo_run",
    "SelfContainedPackager": "nemo_runspec.packaging._nemo_run",
    "RunspecGitPackager": "nemo_runspec.packaging._nemo_run",
    "RunspecPatternPackager": "nemo_runspec.packaging._nemo_run",
    "RunspecHybridPackager": "nemo_runspec.packaging._nemo_run",
}

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nemo_runspec.packaging' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
