"""Where the `nemotron` command under test is: the console script that `pip install -e '.[test]'`
put beside the interpreter running pytest, in whatever venv that is (not a fixed `.venv`).

pip writes console scripts to the interpreter's scripts directory (`sysconfig`), which in
a venv is the directory of `sys.executable`. A `nemotron` found elsewhere (on PATH) is not
used: it may belong to another install than the code under test. When there is none, the
expected path is kept, so a test fails naming where the command should have been.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path


def find_nemotron() -> Path:
    """The `nemotron` console script installed for this interpreter."""
    candidates = (Path(sysconfig.get_path("scripts")) / "nemotron", Path(sys.executable).with_name("nemotron"))
    return next((c for c in candidates if c.is_file()), candidates[0])


NEMOTRON = find_nemotron()
