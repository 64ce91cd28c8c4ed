"""Backends: where a compiled job runs, one class each, found by executor name.

=============================  ==============================================
module                         holds
=============================  ==============================================
``backends.base``              the :class:`Backend` protocol, :class:`DryRun`
``env.registry``               the names: built-ins and the entry-point group
``backends.local``             ``executor = "local"`` (and no profile)
``backends.slurm``             ``executor = "slurm"``
``backends.platform``          docker, skypilot, dgxcloud, lepton
=============================  ==============================================

Adding one: docs/dev/architecture.md, "Adding a backend".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nemo_runspec._lazy import lazy_exports

if TYPE_CHECKING:
    from nemo_runspec.backends.base import Backend, DryRun, backend_for
    from nemo_runspec.env.registry import ENTRY_POINT_GROUP, backend_class, is_backend

__all__ = ["ENTRY_POINT_GROUP", "Backend", "DryRun", "backend_class", "backend_for", "is_backend"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "base": ("Backend", "DryRun", "backend_for"),
    "nemo_runspec.env.registry": ("ENTRY_POINT_GROUP", "backend_class", "is_backend"),
})
