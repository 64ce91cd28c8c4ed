"""Every env.toml test starts without $NEMOTRON_ENV_FILE."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_env_var(monkeypatch):
    monkeypatch.delenv("NEMOTRON_ENV_FILE", raising=False)
