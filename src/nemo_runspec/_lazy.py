"""Package ``__init__`` exports loaded on first use (PEP 562).

``from nemo_runspec.slurm import submit`` imports ``slurm.submission`` only, not
every module of the package: the CLI imports recipe commands for ``--help``,
and their imports must stay cheap (``bench/bench_cli_help.py``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_exports(
    package: str, modules: Mapping[str, Iterable[str]], *, own: Iterable[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for a package exporting ``modules`` (submodule
    name, or a full ``nemo_runspec.`` module path, -> the names it provides).

    The package keeps a literal ``__all__`` (for linters and readers); every
    name in it must be provided here, defined in the package or listed in ``own``
    (names the package's own ``__getattr__`` makes).
    """
    where = {
        name: module if module.startswith("nemo_runspec.") else f"{package}.{module}"
        for module, names in modules.items()
        for name in names
    }
    clash = sorted(name for name in where if name in modules)
    if clash:
        # Importing submodule X sets the package attribute X to the module,
        # hiding a lazily exported function X (`slurm.submit(...)` would call a module).
        raise ImportError(f"{package} exports {clash}, which are also its submodule names")
    namespace = importlib.import_module(package).__dict__
    missing = [n for n in namespace.get("__all__", ()) if n not in where and n not in namespace and n not in set(own)]
    if missing:
        raise ImportError(f"{package}.__all__ names {missing} that nothing provides")

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(where))

    return __getattr__, __dir__
