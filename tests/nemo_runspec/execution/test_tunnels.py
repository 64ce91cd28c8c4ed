"""The SSH probe before a submission (execution/tunnels.py): it fails fast with a clear message, and a missing identity file is named."""

from __future__ import annotations

import socket
import time

import pytest

from nemo_runspec.errors import ExecutionError
from nemo_runspec.execution.tunnels import probe_ssh


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_probe_fails_fast_with_clear_message(tmp_path):
    key = tmp_path / "id"
    key.write_text("not a key")
    port = _closed_port()
    t0 = time.monotonic()
    with pytest.raises(ExecutionError) as err:
        probe_ssh("127.0.0.1", "someone", port, str(key), timeout=5)
    assert time.monotonic() - t0 < 15
    msg = str(err.value)
    assert f"someone@127.0.0.1:{port}" in msg and str(key) in msg and "refused" in msg.lower()


def test_probe_missing_identity(tmp_path):
    with pytest.raises(ExecutionError, match="identity file not found"):
        probe_ssh("127.0.0.1", "u", 22, str(tmp_path / "missing"))
