"""``nemo_runspec.cli.recipe_config`` is :mod:`nemo_runspec.cmdline.recipe_config` (the same module object).

The command-line grammar moved below the library's lower layers, which read it
(``run``, ``job``, ``pipeline``, ``sweep``); this path stays for the commands and tools
that import it.
"""

import sys

from nemo_runspec.cmdline import recipe_config as _module

sys.modules[__name__] = _module
