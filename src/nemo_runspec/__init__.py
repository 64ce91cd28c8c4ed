"""nemo_runspec: PEP 723 ``[tool.runspec]`` metadata and the shared CLI toolkit.

Public API (stable contract, imported by other tools)::

    from nemo_runspec import parse, parse_text, Runspec, RunspecError

Attributes are loaded on first use so that importing a submodule (e.g.
``nemo_runspec.errors``) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nemo_runspec import _compat

__version__ = "0.1.0"

_EXPORTS = {
    "Runspec": "nemo_runspec.spec.models",
    "RunspecConfig": "nemo_runspec.spec.models",
    "RunspecResources": "nemo_runspec.spec.models",
    "RunspecRun": "nemo_runspec.spec.models",
    "parse": "nemo_runspec.spec.parser",
    "parse_text": "nemo_runspec.spec.parser",
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

#: module paths that moved (the reference's flat names, ours before issue 31) import as the
#: modules that hold the code now, the same objects: one table, nemo_runspec/_compat.py
_compat.install()

if TYPE_CHECKING:
    from nemo_runspec.errors import NemoRunspecError, RunspecError
    from nemo_runspec.spec.models import Runspec, RunspecConfig, RunspecResources, RunspecRun
    from nemo_runspec.spec.parser import parse, parse_text


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nemo_runspec' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
