"""nemo_runspec: PEP 723 ``[tool.runspec]`` metadata and the shared CLI toolkit.

Public API (stable contract, imported by other tools)::

    from nemo_runspec import parse, parse_text, Runspec, RunspecError

Attributes are loaded on first use so that importing a submodule (e.g.
``nemo_runspec.errors``) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nemo_runspec._lazy import alias_modules

__version__ = "0.1.0"

_EXPORTS = {
    "Runspec": "nemo_runspec._models",
    "RunspecConfig": "nemo_runspec._models",
    "RunspecResources": "nemo_runspec._models",
    "RunspecRun": "nemo_runspec._models",
    "parse": "nemo_runspec._parser",
    "parse_text": "nemo_runspec._parser",
    "NemoRunspecError": "nemo_runspec.errors",
    "RunspecError": "nemo_runspec.errors",
}

__all__ = [
    "NemoRunspecError",
    "Runspec",
    "RunspecConfig",
    "RunspecError",
    "RunspecResources",
    "RunspecRun",
    "__version__",
    "parse",
    "parse_text",
]

#: the reference's flat module names (its package readme's module table) -> the module they are
#: now, the same object (``nemo_runspec.help is nemo_runspec.cli.help``). A table, not a file per
#: name: the library's own modules never import the CLI layer (tests/test_house_rules.py).
_MOVED_MODULES = {
    "nemo_runspec.cli_context": "nemo_runspec.cmdline.context",
    "nemo_runspec.recipe_config": "nemo_runspec.cmdline.recipe_config",
    "nemo_runspec.recipe_typer": "nemo_runspec.cli.recipe_typer",
    "nemo_runspec.help": "nemo_runspec.cli.help",
    "nemo_runspec.display": "nemo_runspec.cli.display",
}
alias_modules(_MOVED_MODULES)

if TYPE_CHECKING:
    from nemo_runspec._models import Runspec, RunspecConfig, RunspecResources, RunspecRun
    from nemo_runspec._parser import parse, parse_text
    from nemo_runspec.errors import NemoRunspecError, RunspecError


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nemo_runspec' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
