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
- The stop signals (SIGINT, SIGTERM, SIGHUP) have their usual actions in the test process,
  whatever started it: a suite run as a background job of a script (``bash .ci/run &``, a
  CI runner without job control) inherits SIGINT ignored, which every process a test starts
  would inherit in turn, and the Ctrl-C tests would time out (:func:`_usual_stop_signals`).
  No test may leave one ignored or blocked either (:func:`_stop_signals_left_as_found`): the
  state is put back after each test, and a test that changed it fails naming what it left.
- A test that takes a container stack's fixture (``container_image``, ``docker_host``) is
  marked ``pyxis`` or ``docker`` (``tests/container_stack.py``).
"""

from __future__ import annotations

import ast
import os
import signal
import threading
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


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _usual_stop_signals() -> None:
    """SIGINT raises KeyboardInterrupt, SIGTERM and SIGHUP end the process, none is blocked:
    what an interactive shell gives a command, which the signal tests expect."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in _STOP_SIGNALS:
        if signal.getsignal(sig) is signal.SIG_IGN:
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)


@pytest.fixture(autouse=True)
def _stop_signals_left_as_found() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {sig: signal.getsignal(sig) for sig in _STOP_SIGNALS}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    yield
    ignored = [sig.name for sig in _STOP_SIGNALS
               if signal.getsignal(sig) is signal.SIG_IGN and handlers[sig] is not signal.SIG_IGN]
    left = signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # the mask the test left; put back
    blocked = [sig.name for sig in _STOP_SIGNALS if sig in left and sig not in mask]
    for sig, handler in handlers.items():
        signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
    if ignored or blocked:
        left_as = [f"{', '.join(names)} {how}" for names, how in ((ignored, "ignored"), (blocked, "blocked")) if names]
        pytest.fail(f"the test left {' and '.join(left_as)} in the test process (put back now): "
                    "the processes later tests start would inherit it")


def _ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "allowed_skip(reason): this test may skip under CI=true, for the reason given")
    for line in container_stack.marker_descriptions():
        config.addinivalue_line("markers", line)
    _ROOT[:] = [config.rootpath]
    _usual_stop_signals()  # in each xdist worker too: each runs this hook


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
