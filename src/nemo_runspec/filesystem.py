"""``nemo_runspec.filesystem``, the path the reference documents, is :mod:`nemo_runspec.artifacts.filesystem`.

The module itself lives in its package; this name stays so that
``from nemo_runspec.filesystem import ...`` keeps working (it is the same module object).
"""

import sys

from nemo_runspec.artifacts import filesystem as _module

sys.modules[__name__] = _module
