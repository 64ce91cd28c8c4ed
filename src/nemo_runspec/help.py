"""``nemo_runspec.help``, the path the reference documents, is :mod:`nemo_runspec.cli.help`.

The module itself lives in its package; this name stays so that
``from nemo_runspec.help import ...`` keeps working (it is the same module object).
"""

import sys

from nemo_runspec.cli import help as _module

sys.modules[__name__] = _module
