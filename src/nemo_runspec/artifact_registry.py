"""``nemo_runspec.artifact_registry``, the path the reference documents, is :mod:`nemo_runspec.artifacts.registry`.

The module itself lives in its package; this name stays so that
``from nemo_runspec.artifact_registry import ...`` keeps working (it is the same module object).
"""

import sys

from nemo_runspec.artifacts import registry as _module

sys.modules[__name__] = _module
