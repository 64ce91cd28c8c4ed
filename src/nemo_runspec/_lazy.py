"""Package ``__init__`` exports loaded on first use (PEP 562), and module aliases.

``from nemo_runspec.slurm import submit`` imports ``slurm.submission`` only, not
every module of the package: the CLI imports recipe commands for ``--help``,
and their imports must stay cheap (``bench/bench_cli_help.py``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping
from importlib.machinery import ModuleSpec
from types import ModuleType
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


class _ModuleAliases(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finder and loader of module aliases: ``import ALIAS`` gives the module ``TARGET`` itself."""

    def __init__(self, aliases: Mapping[str, str]) -> None:
        self.aliases = dict(aliases)

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if fullname not in self.aliases:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        # The target module object itself: its __name__ and __spec__ stay the target's.
        return importlib.import_module(self.aliases[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        """Nothing: the target ran when it was imported."""


def alias_modules(aliases: Mapping[str, str]) -> None:
    """Make each full module name of ``aliases`` (``"pkg.old"``) import as the module it maps
    to (``"pkg.sub.new"``): the same module object, loaded on first use (nothing is imported
    here). For module paths a package documented once and has moved since; a name that is
    not in ``aliases`` is left to the other finders. Calling it again with the same table
    adds nothing."""
    if any(isinstance(f, _ModuleAliases) and f.aliases == dict(aliases) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _ModuleAliases(aliases))
