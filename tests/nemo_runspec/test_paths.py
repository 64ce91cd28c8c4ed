"""Where nemotron keeps its files (paths.py): NEMOTRON_HOME and its default, the jobs directory under it."""

from __future__ import annotations

from pathlib import Path

from nemo_runspec.config import generate_job_dir
from nemo_runspec.paths import cache_dir, jobs_dir, nemotron_home


def test_default_base_is_nemotron_home_jobs(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    assert nemotron_home() == tmp_path / "home"
    assert jobs_dir() == tmp_path / "home" / "jobs"
    assert cache_dir() == tmp_path / "home" / "cache"
    assert generate_job_dir("r").parent == tmp_path / "home" / "jobs" / "r"


def test_nemotron_home_default(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("NEMOTRON_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert nemotron_home() == tmp_path / ".nemotron"
    monkeypatch.setenv("NEMOTRON_HOME", "")
    assert nemotron_home() == tmp_path / ".nemotron"
