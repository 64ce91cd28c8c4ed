"""``nemo_runspec.cli_context``, the path the reference documents, is :mod:`nemo_runspec.cli.context`.

The module itself lives in its package; this name stays so that
``from nemo_runspec.cli_context import ...`` keeps working (it is the same module object).
"""

import sys

from nemo_runspec.cli import context as _module

sys.modules[__name__] = _module
