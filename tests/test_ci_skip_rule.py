"""tests/conftest.py's rule, run on a small suite of its own: under CI=true a skip
fails the run unless the test is marked allowed_skip; without CI a skip is a skip."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

SUITE = '''
import pytest

def test_passes():
    pass

def test_skips_without_leave():
    pytest.skip("a dependency is missing")

@pytest.mark.allowed_skip("an optional extra")
def test_skips_with_leave():
    pytest.skip("the extra is not installed")
'''


def run_suite(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_suite.py").write_text(SUITE)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_under_ci_an_unmarked_skip_fails_the_run(tmp_path):
    proc = run_suite(tmp_path, "true")
    assert proc.returncode == 1, proc.stdout
    flagged = [ln for ln in proc.stdout.splitlines() if "only tests marked allowed_skip may skip" in ln]
    assert len(flagged) == 1 and "test_skips_without_leave" in flagged[0], proc.stdout


def test_without_ci_a_skip_is_only_a_skip(tmp_path):
    proc = run_suite(tmp_path, None)
    assert proc.returncode == 0, proc.stdout
    assert "2 skipped" in proc.stdout
