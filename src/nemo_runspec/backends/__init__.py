"""Backends: where a compiled job runs, one class each, found by executor name.

=============================  ==============================================
module                         holds
=============================  ==============================================
``backends.base``              the :class:`Backend` protocol, :class:`DryRun`
``env.registry``               the names: built-ins and the entry-point group
``env.keys``                   what a backend declares of env.toml (``profile``)
``backends.local``             ``executor = "local"`` (and no profile)
``backends.slurm``             ``executor = "slurm"`` (its machinery: ``slurm/``)
``backends.docker``            ``executor = "docker"``
``backends.skypilot``          ``executor = "skypilot"``
``backends.dgxcloud``          ``executor = "dgxcloud"``
``backends.lepton``            ``executor = "lepton"``
``backends.platform``          what the last four share (nemo-run's other executors)
=============================  ==============================================

Each class declares, once, all that is its own (its name, its env.toml keys and rules, its
nemo-run executor, what it can do); shared code reads the declarations and never compares
executor names (``tests/test_executor_names.py``).

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
