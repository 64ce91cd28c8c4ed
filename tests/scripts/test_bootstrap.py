"""scripts/bootstrap.sh: a failed pip install fails the bootstrap and marks nothing installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_failed_pip_install_exits_non_zero_and_writes_no_stamp(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "bootstrap.sh", tmp_path / "scripts" / "bootstrap.sh")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "0"\ndependencies = ["nonexistent-pkg-xyz==9"]\n'
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
    )
    # No index: the install must fail, offline and fast.
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(tmp_path / "no-wheels"),
               PYTHON=sys.executable)
    proc = subprocess.run(["bash", "scripts/bootstrap.sh"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "pip install of nemotron failed" in proc.stderr
    assert not list((tmp_path / ".venv").glob(".installed-*"))
