"""``nemo_runspec.recipe_typer``, the path the reference documents, is :mod:`nemo_runspec.cli.recipe_typer`.

The module itself lives in its package; this name stays so that
``from nemo_runspec.recipe_typer import ...`` keeps working (it is the same module object).
"""

import sys

from nemo_runspec.cli import recipe_typer as _module

sys.modules[__name__] = _module
