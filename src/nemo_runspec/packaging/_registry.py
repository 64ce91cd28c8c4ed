"""Plans and progress callbacks of packagers, looked up by id.

nemo-run rebuilds executors (and their packagers) from their dataclass fields
(``Executor.clone()`` is ``fdl.build(self.to_config())``), which drops anything
that is not a plain field. Packagers therefore carry only a ``plan_id`` string;
the plan the caller holds and its progress callback live here.
"""

from __future__ import annotations

import uuid

from nemo_runspec.packaging.manifest import PackagingPlan
from nemo_runspec.packaging.progress import ProgressCallback

_PLANS: dict[str, PackagingPlan] = {}
_PROGRESS: dict[str, ProgressCallback] = {}


def register(plan: PackagingPlan, progress: ProgressCallback | None = None) -> str:
    """Store ``plan`` (and ``progress``) under a new id and return the id."""
    pid = uuid.uuid4().hex
    _PLANS[pid] = plan
    if progress is not None:
        _PROGRESS[pid] = progress
    return pid


def plan_for(pid: str) -> PackagingPlan | None:
    """The plan registered under ``pid``."""
    return _PLANS.get(pid)


def progress_for(pid: str) -> ProgressCallback | None:
    """The progress callback registered under ``pid``."""
    return _PROGRESS.get(pid)
