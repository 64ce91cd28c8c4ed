"""Fixtures shared by every test: the repository root and an isolated HOME.

Cluster and SSH fixtures live in tests/e2e/conftest.py so that plain unit tests
never touch Slurm.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """Absolute path of the repository checkout under test."""
    return REPO_ROOT


@pytest.fixture
def tmp_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME, NEMOTRON_HOME and NEMORUN_HOME at fresh dirs under tmp_path.

    Also drops NEMOTRON_ENV_FILE so a developer's own env.toml cannot leak in.
    Returns the new HOME. (OpenSSH ignores $HOME and keeps using root's ~/.ssh.)
    """
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("NEMOTRON_HOME", str(home / ".nemotron"))
    monkeypatch.setenv("NEMORUN_HOME", str(home / ".nemo_run"))
    monkeypatch.delenv("NEMOTRON_ENV_FILE", raising=False)
    return home
