"""Shared helpers for the tests that check which heavy modules an import or a command pulls in.

Each probe runs in a fresh interpreter, so modules imported by the test session do not count.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_NEMOTRON_MAIN = """
import sys
sys.argv = ["nemotron", *sys.argv[1:]]
from nemotron.cli.bin.nemotron import main
rc = 0
try:
    main()
except SystemExit as exc:
    rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
print(f"RC={rc}", file=sys.stderr)
print("HEAVY=" + ",".join(m for m in ("pydantic", "omegaconf", "nemo_run") if m in sys.modules),
      file=sys.stderr)
"""


def imported_after(code: str, modules: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter; its stdout is the comma-joined ``modules`` now imported."""
    probe = f"{code}\nimport sys\nprint(','.join(m for m in {modules!r} if m in sys.modules))\n"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)


def nemotron_heavy_imports(args: list[str], cwd: Path, *, rc: int = 0
                           ) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run ``nemotron ARGS`` in a fresh interpreter; return the process and which of pydantic,
    omegaconf and nemo_run it imported. The command's exit code (``SystemExit`` is caught
    to read ``sys.modules`` afterwards) must be ``rc``: a command that failed early could
    import nothing heavy and pass for light."""
    proc = subprocess.run([sys.executable, "-c", _NEMOTRON_MAIN, *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120, env={**os.environ, "COLUMNS": "200"})
    codes = [x for x in proc.stderr.splitlines() if x.startswith("RC=")]
    assert codes == [f"RC={rc}"], f"nemotron {' '.join(args)}: expected exit {rc}\n{proc.stderr}"
    line = [x for x in proc.stderr.splitlines() if x.startswith("HEAVY=")][-1]
    return proc, [m for m in line[len("HEAVY="):].split(",") if m]
