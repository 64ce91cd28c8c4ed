"""``nemo_runspec.cli.context`` is :mod:`nemo_runspec.cmdline.context` (the same module object).

The command-line grammar moved below the library's lower layers, which read it
(``run``, ``job``, ``pipeline``, ``sweep``); this path stays for the commands and tools
that import it.
"""

import sys

from nemo_runspec.cmdline import context as _module

sys.modules[__name__] = _module
