"""``nemo_runspec.recipe_config``, the path the reference documents, is :mod:`nemo_runspec.cli.recipe_config`.

The module itself lives in its package; this name stays so that
``from nemo_runspec.recipe_config import ...`` keeps working (it is the same module object).
"""

import sys

from nemo_runspec.cli import recipe_config as _module

sys.modules[__name__] = _module
