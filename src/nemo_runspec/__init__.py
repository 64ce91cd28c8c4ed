"""nemo_runspec: PEP 723 ``[tool.runspec]`` metadata and the shared CLI toolkit.

Public API (stable contract, imported by other tools)::

    from nemo_runspec import parse, parse_text, Runspec, RunspecError
"""

from __future__ import annotations

from nemo_runspec._models import Runspec, RunspecConfig, RunspecResources, RunspecRun
from nemo_runspec._parser import parse, parse_text
from nemo_runspec.errors import NemoRunspecError, RunspecError

__version__ = "0.1.0"

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
