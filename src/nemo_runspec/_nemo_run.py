"""Import the parts of nemo-run that build and submit a Slurm job, not all of nemo-run.

``import nemo_run`` costs seconds: its package ``__init__`` imports every
executor (Lepton pulls in leptonai/fastapi/httpx, Docker the YAML serializer,
which imports torch when it is installed), the CLI and the Experiment machinery.
A Slurm job needs ``nemo_run.core.execution.slurm`` (the executor and
``SlurmBatchRequest``), the torchrun component, the tunnels, the packager base
class and ``nemo_run.run.ray.slurm`` for Ray jobs: about a fifth of that.

Python runs every parent package's ``__init__`` before a submodule, so
:func:`lean` registers ``nemo_run`` and ``nemo_run.core.execution`` (the two
packages whose ``__init__`` imports everything) as *deferred* packages: module
objects built from their real import spec (same ``__path__``, ``__file__``,
``__spec__``) whose ``__init__`` code has not run yet. Submodules import from
them as usual. The first access to any other attribute (``nemo_run.Experiment``,
``from nemo_run import SlurmExecutor``, ``nemo_run.__version__``) runs the real
``__init__`` in that same module object, so code that wants all of nemo-run
still gets it, with the very classes the lean path already used. When nemo-run is
already imported, :func:`lean` does nothing.

``tests/nemo_runspec/slurm/test_lean_equivalence.py`` checks that a job renders
byte for byte the same way through this path as through ``import nemo_run`` +
``Experiment.dryrun``, and that torch, Lepton and the other executors stay out.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any

#: Packages whose ``__init__`` imports far more than a Slurm job uses.
DEFERRED = ("nemo_run", "nemo_run.core.execution")

_lock = threading.RLock()
_MARKER = "_nemotron_deferred"


def lean() -> None:
    """Make ``import nemo_run.<submodule>`` skip the heavy package ``__init__``s.

    Idempotent and cheap after the first call. A package that is already
    imported (deferred or complete) is left as it is.
    """
    from nemo_runspec._invoke import stop_commands_on_interrupt

    stop_commands_on_interrupt()  # the commands nemo-run runs through invoke stop on SIGTERM too
    if all(name in sys.modules for name in DEFERRED):
        return
    with _lock:
        for name in DEFERRED:
            if name not in sys.modules:
                _defer(name)


def _defer(name: str) -> None:
    parent, _, child = name.rpartition(".")
    if parent:
        importlib.import_module(parent)  # nemo_run.core: an empty __init__
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    module = importlib.util.module_from_spec(spec)
    state = {"completing": False}

    def __getattr__(attr: str) -> Any:
        # A submodule (`from nemo_run import config`): let the import system load
        # it. Inside the real __init__ (completing) a missing name is missing.
        if state["completing"] or _is_submodule(module, attr):
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        complete(module)
        return getattr(module, attr)

    def complete(mod: ModuleType) -> None:
        with _lock:
            if mod.__dict__.get("__getattr__") is not __getattr__:
                return  # completed by another thread
            state["completing"] = True
            try:
                spec.loader.exec_module(mod)  # type: ignore[union-attr]
            finally:
                state["completing"] = False
            del mod.__dict__["__getattr__"]
            del mod.__dict__[_MARKER]

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module.__dict__[_MARKER] = True
    sys.modules[name] = module
    if parent:
        setattr(sys.modules[parent], child, module)


def _is_submodule(module: ModuleType, attr: str) -> bool:
    if not attr.isidentifier() or attr.startswith("__"):
        return False
    return importlib.machinery.PathFinder.find_spec(
        f"{module.__name__}.{attr}", list(module.__path__)
    ) is not None


def is_complete(name: str = "nemo_run") -> bool:
    """True when ``name``'s own ``__init__`` has run (everything of it is imported)."""
    module = sys.modules.get(name)
    return module is not None and not module.__dict__.get(_MARKER)

