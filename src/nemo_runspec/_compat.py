"""Module paths that moved: the old dotted name imports the module that holds the code now.

One table and one importlib meta-path finder, installed by the package's ``__init__``:
``import nemo_runspec.help``, ``from nemo_runspec import help`` and
``importlib.import_module("nemo_runspec.cli_context")`` give the module object itself
(``nemo_runspec.help is nemo_runspec.cli.help``), so patching or ``isinstance`` checks
through either path agree. Nothing is imported until an old name is asked for, and a name
that is not in the table is left to the other finders (a real submodule is never shadowed).

The library's own code imports the new paths; the table is for code written against the
reference's module names (its package readme's module table) and against ours before the
top of the package was sorted into folders by layer (issue 31; docs/dev/architecture.md).
Standard library only: this module is imported by ``nemo_runspec/__init__.py``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Mapping
from importlib.machinery import ModuleSpec
from types import ModuleType

#: the reference's flat module names that live in a subpackage now
REFERENCE: Mapping[str, str] = {
    "_parser": "spec.parser",
    "_models": "spec.models",
    "cli_context": "cmdline.context",
    "recipe_config": "cmdline.recipe_config",
    "recipe_typer": "cli.recipe_typer",
    "help": "cli.help",
    "display": "cli.display",
    "exceptions": "artifacts.errors",
    "artifact_registry": "artifacts.registry",
    "filesystem": "artifacts.filesystem",
    "run": "job.run_config",
    "squash": "slurm.squash",
    "step": "pipeline.step",
    "evaluator": "evaluation.evaluator",
    "utils": "config.interpolate",
}

#: our own module paths before the move into spec/, runtime/, job/, pipeline/, evaluation/
#: (``nemo_runspec.job`` and ``nemo_runspec.pipeline`` are packages now whose faces export
#: the old modules' public names, so they are not here)
MOVED: Mapping[str, str] = {
    "_schema": "spec.schema",
    "_pep723": "spec.pep723",
    "_cmd": "spec.cmd",
    "_toml_lines": "spec.toml_lines",
    "discovery": "spec.discovery",
    **{name: f"runtime.{name}" for name in (
        "ranks", "signals", "stale", "dotted", "wandb_switch", "outcome", "lognoise", "ended",
        "lifeline", "locks", "procs")},
    "pipeline_records": "pipeline.records",
    "pipeline_sbatch": "pipeline.sbatch",
    "stage_selection": "pipeline.stage_selection",
    "compose": "backends.compose",
    "eval_tasks": "evaluation.tasks",
    "eval_launcher": "evaluation.launcher",
    "git_mounts": "env.git_mounts",
    "cli.context": "cmdline.context",
    "cli.recipe_config": "cmdline.recipe_config",
    # moved down so that no folder imports one that imports it (tests/test_house_rules.py)
    "execution.settings": "job.settings",
    "scales.model": "spec.scales",
}


def aliases() -> dict[str, str]:
    """Every old full module name -> the full name of the module it is now."""
    return {f"nemo_runspec.{old}": f"nemo_runspec.{new}" for old, new in {**REFERENCE, **MOVED}.items()}


class AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finder and loader of module aliases: ``import OLD`` gives the module ``NEW`` itself."""

    def __init__(self, table: Mapping[str, str]) -> None:
        self.table = dict(table)
        self._own_specs: dict[str, ModuleSpec | None] = {}

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if fullname not in self.table:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        # The target module object itself (its __name__ stays the target's).
        module = importlib.import_module(self.table[spec.name])
        self._own_specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing runs (the target ran when it was imported). importlib has just set the
        module's ``__spec__`` to the alias's: put its own back, which ``find_spec`` of the real
        name, ``importlib.reload`` and tools reading ``__spec__`` must see."""
        own = self._own_specs.pop(module.__name__, None)
        if own is not None:
            module.__spec__ = own


def install() -> None:
    """Put the finder of :func:`aliases` first on ``sys.meta_path`` (once; imports nothing)."""
    if not any(isinstance(f, AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, AliasFinder(aliases()))
