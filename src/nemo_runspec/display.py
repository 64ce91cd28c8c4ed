"""``nemo_runspec.display``, the path the reference documents, is :mod:`nemo_runspec.cli.display`.

The module itself lives in its package; this name stays so that
``from nemo_runspec.display import ...`` keeps working (it is the same module object).
"""

import sys

from nemo_runspec.cli import display as _module

sys.modules[__name__] = _module
