"""Suite-wide rules.

- Under ``CI=true`` a skipped test fails the run. A skip there means something
  the suite needs is missing (a broken install, a cluster that did not come up)
  and a green run would hide it. The only skips
  allowed are tests marked ``allowed_skip``, each with the reason CI cannot have
  what it needs (an optional extra, a source tree outside the checkout); a module
  skipped as a whole (``pytest.skip(..., allow_module_level=True)``, a module-level
  ``importorskip``) is allowed when its own ``pytestmark`` holds ``allowed_skip``. Under
  pytest-xdist the controller receives every worker's skip reports and applies the rule.
- No test reaches W&B: :func:`_no_wandb_network` puts every test (and every
  process it starts, which inherits the environment) in offline mode, with the
  server address pointing at ``127.0.0.1:9`` where nothing listens and error
  reporting off. A test that wants other values sets them with ``monkeypatch``
  (``tests/wandb_offline.offline_env`` does), which restores these afterwards.
- A test that takes a container stack's fixture (``container_image``, ``docker_host``) is
  marked ``pyxis`` or ``docker`` (``tests/container_stack.py``).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import container_stack

_SKIPPED: list[str] = []
_ROOT: list[Path] = []

#: what every test runs under unless it sets otherwise (see the module docstring)
WANDB_GUARD = {"WANDB_MODE": "offline", "WANDB_BASE_URL": "http://127.0.0.1:9", "WANDB_ERROR_REPORTING": "false"}


@pytest.fixture(scope="session", autouse=True)
def _no_wandb_network() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        for name, value in WANDB_GUARD.items():
            mp.setenv(name, value)
        yield


def _ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "allowed_skip(reason): this test may skip under CI=true, for the reason given")
    for line in container_stack.marker_descriptions():
        config.addinivalue_line("markers", line)
    _ROOT[:] = [config.rootpath]


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    container_stack.mark_by_fixture(items)


@pytest.fixture(scope="session")
def docker_host() -> str:
    """DOCKER_HOST of the test engine (scripts/docker-engine.sh); skips, or fails under CI=true, without one."""
    return container_stack.docker_host()


def module_allows_skip(path: Path) -> bool:
    """True when the module's own top-level ``pytestmark`` holds ``allowed_skip``.

    Read from its source: a module skipped while being imported leaves no module
    object (nor items with markers) to read it from.
    """
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return False
    for node in tree.body:
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign) else [])
        value = getattr(node, "value", None)
        if value is not None and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets) \
                and any(isinstance(n, ast.Attribute) and n.attr == "allowed_skip" for n in ast.walk(value)):
            return True
    return False


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if not (_ci() and report.skipped):
        return
    file = report.nodeid.split("::")[0]
    if file.endswith(".py") and _ROOT and module_allows_skip(_ROOT[0] / file):
        return
    _SKIPPED.append(f"{report.nodeid} (whole module)")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _ci() and report.skipped and "allowed_skip" not in report.keywords and not hasattr(report, "wasxfail"):
        _SKIPPED.append(report.nodeid)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:  # noqa: ANN001
    if _SKIPPED:
        terminalreporter.section("skips not allowed under CI=true", red=True)
        for nodeid in _SKIPPED:
            terminalreporter.line(f"{nodeid}: skipped; under CI=true only tests marked allowed_skip may skip")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _SKIPPED and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
