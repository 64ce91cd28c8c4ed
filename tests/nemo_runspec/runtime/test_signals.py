"""Signals (signals.py): the CLI exits 128 plus the signal it got."""

from __future__ import annotations

import signal

import pytest

from nemo_runspec.runtime.signals import Interrupted, exit_code


@pytest.mark.parametrize(("exc", "expected"), [
    (KeyboardInterrupt(), 130),
    (Interrupted(signal.SIGTERM), 143),
    (Interrupted(signal.SIGHUP), 129),
])
def test_the_cli_exits_128_plus_the_signal_it_got(exc: BaseException, expected: int) -> None:
    assert exit_code(exc) == expected
