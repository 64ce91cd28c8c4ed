"""Suite-wide rules.

- Under ``CI=true`` a skipped test fails the run. A skip there means something
  the suite needs is missing (a broken install, a cluster that did not come up)
  and a green run would hide it. The only skips allowed are tests marked
  ``allowed_skip``, each with the reason CI cannot have what it needs (an
  optional extra, a source tree outside the checkout).
- No test reaches W&B: :func:`_no_wandb_network` puts every test (and every
  process it starts, which inherits the environment) in offline mode, with the
  server address pointing at ``127.0.0.1:9`` where nothing listens and error
  reporting off. A test that wants other values sets them with ``monkeypatch``
  (``tests/wandb_offline.offline_env`` does), which restores these afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

_SKIPPED: list[str] = []

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


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if _ci() and report.skipped:
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
