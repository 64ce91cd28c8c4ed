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


def job_errors(stderr: str) -> list[str]:
    """The ``error:`` lines a run here printed before its ending (docs/execution.md, "How a
    job ends"), after checking that the ending's first line repeats the last of them: a local
    run ends with the job's outcome (its last error), the state line and the job dir, so a
    failing job's error is said once by the job and once in that summary, and nowhere else."""
    import re

    lines = stderr.splitlines()
    states = [i for i, ln in enumerate(lines) if re.match(r"job \S+: [A-Z_]+ \(exit code", ln)]
    if not states:
        return [ln for ln in lines if ln.startswith("error: ")]
    end = states[-1]
    said = [ln for ln in lines[:end - 1] if ln.startswith("error: ")]
    assert said and lines[end - 1] == said[-1], stderr[-3000:]
    return said
