"""tests/conftest.py's rule, run on a small suite of its own: under CI=true a skip
fails the run unless the test (or, for a module skipped whole, the module's
``pytestmark``) is marked allowed_skip, with or without pytest-xdist; without CI a skip
is a skip."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import module_allows_skip

SUITE = """
import pytest

def test_passes():
    pass

def test_skips_without_leave():
    pytest.skip("a dependency is missing")

@pytest.mark.allowed_skip("an optional extra")
def test_skips_with_leave():
    pytest.skip("the extra is not installed")
"""

ALLOWED_ONLY = """
import pytest

def test_passes():
    pass

@pytest.mark.allowed_skip("an optional extra")
def test_skips_with_leave():
    pytest.skip("the extra is not installed")
"""

SKIPPED_MODULE = """
import pytest

pytest.skip("the cluster is not up", allow_module_level=True)

def test_never_collected():
    pass
"""

SKIPPED_MODULE_ALLOWED = """
import pytest

pytestmark = [pytest.mark.filterwarnings("ignore"), pytest.mark.allowed_skip("an optional extra")]

pytest.importorskip("no_such_module_for_the_skip_rule")

def test_never_collected():
    pass
"""


def run_suite(tmp_path: Path, ci: str | None, files: dict[str, str] | None = None,
              *args: str) -> subprocess.CompletedProcess[str]:
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    for name, text in (files or {"test_suite.py": SUITE}).items():
        (tmp_path / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    # the copied conftest imports tests.container_stack from this checkout
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parents[1]), env.get("PYTHONPATH")]))
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args, str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def _flagged(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """The nodes the rule names, sorted."""
    return sorted(ln.split(": skipped;")[0] for ln in proc.stdout.splitlines()
                  if "only tests marked allowed_skip may skip" in ln)


def test_under_ci_an_unmarked_skip_fails_the_run(tmp_path):
    proc = run_suite(tmp_path, "true")
    assert proc.returncode == 1, proc.stdout
    assert _flagged(proc) == ["test_suite.py::test_skips_without_leave"], proc.stdout


def test_without_ci_a_skip_is_only_a_skip(tmp_path):
    proc = run_suite(tmp_path, None)
    assert proc.returncode == 0, proc.stdout
    assert "2 skipped" in proc.stdout


MIXED = {"test_suite.py": SUITE, "test_cluster.py": SKIPPED_MODULE, "test_extra.py": SKIPPED_MODULE_ALLOWED}
FLAGGED = ["test_cluster.py (whole module)", "test_suite.py::test_skips_without_leave"]


def test_under_ci_a_module_skipped_whole_fails_the_run_unless_its_pytestmark_allows_it(tmp_path):
    proc = run_suite(tmp_path, "true", MIXED)
    assert proc.returncode == 1, proc.stdout
    assert _flagged(proc) == FLAGGED, proc.stdout


def test_under_ci_only_allowed_skips_pass(tmp_path):
    proc = run_suite(tmp_path, "true", {"test_suite.py": ALLOWED_ONLY, "test_extra.py": SKIPPED_MODULE_ALLOWED})
    assert proc.returncode == 0, proc.stdout
    assert _flagged(proc) == [] and "1 passed, 2 skipped" in proc.stdout, proc.stdout


def test_under_ci_with_xdist_skips_in_workers_fail_the_run(tmp_path):
    """pytest-xdist runs tests and collects modules in worker processes; the controller,
    which receives their reports, applies the rule and sets the exit code."""
    proc = run_suite(tmp_path, "true", MIXED, "-n", "2")
    assert proc.returncode == 1, proc.stdout
    assert _flagged(proc) == FLAGGED, proc.stdout


def test_under_ci_with_xdist_only_allowed_skips_pass(tmp_path):
    proc = run_suite(tmp_path, "true", {"test_suite.py": ALLOWED_ONLY, "test_extra.py": SKIPPED_MODULE_ALLOWED},
                     "-n", "2")
    assert proc.returncode == 0, proc.stdout
    assert _flagged(proc) == [] and "1 passed, 2 skipped" in proc.stdout, proc.stdout


def test_module_allows_skip_reads_only_a_top_level_pytestmark(tmp_path):
    cases = {
        "pytestmark = pytest.mark.allowed_skip('x')\n": True,
        "pytestmark: list = [pytest.mark.slurm, pytest.mark.allowed_skip('x')]\n": True,
        "pytestmark = [pytest.mark.slurm]\n": False,
        "marks = pytest.mark.allowed_skip('x')\n": False,
        "def f():\n    pytestmark = pytest.mark.allowed_skip('x')\n": False,
        "pytestmark = (\n": False,  # not Python: no exemption
    }
    for i, (text, allowed) in enumerate(cases.items()):
        (tmp_path / f"m{i}.py").write_text(text)
        assert module_allows_skip(tmp_path / f"m{i}.py") is allowed, text
    assert module_allows_skip(tmp_path / "missing.py") is False
