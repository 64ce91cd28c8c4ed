"""Tests for nemo_runspec.env.discovery (and parse_env)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nemo_runspec.cli_context import GlobalContext
from nemo_runspec.env import (
    find_env_file,
    parse_env,
)
from nemo_runspec.errors import EnvFileError
from tests.nemo_runspec.env.env_toml import SIMPLE, write

REPO = Path(__file__).resolve().parents[3]


# --------------------------------------------------------------------------- discovery


def make_project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def test_find_walks_up_to_project_root(tmp_path):
    root = make_project(tmp_path)
    env = write(root / "env.toml", SIMPLE)
    deep = root / "a" / "b"
    deep.mkdir(parents=True)
    assert find_env_file(start=deep) == env


def test_find_prefers_nearest(tmp_path):
    root = make_project(tmp_path)
    write(root / "env.toml", SIMPLE)
    nearer = write(root / "a" / "env.toml", SIMPLE)
    (root / "a" / "b").mkdir()
    assert find_env_file(start=root / "a" / "b") == nearer


def test_find_never_goes_beyond_project_root(tmp_path):
    write(tmp_path / "env.toml", SIMPLE)  # above the project: must be ignored
    root = make_project(tmp_path)
    (root / "sub").mkdir()
    assert find_env_file(start=root / "sub") is None


def test_pyproject_marks_root_too(tmp_path):
    write(tmp_path / "env.toml", SIMPLE)
    root = tmp_path / "p"
    write(root / "pyproject.toml", "[project]\nname='x'\n")
    (root / "src").mkdir()
    assert find_env_file(start=root / "src") is None
    env = write(root / "env.toml", SIMPLE)
    assert find_env_file(start=root / "src") == env


def test_outside_any_project_only_start_dir(tmp_path):
    write(tmp_path / "env.toml", SIMPLE)
    (tmp_path / "x").mkdir()
    # tmp dirs have no .git/pyproject above them, so only x itself is searched
    assert find_env_file(start=tmp_path / "x") is None
    assert find_env_file(start=tmp_path) == tmp_path / "env.toml"


def test_explicit_beats_env_var_beats_walk(tmp_path, monkeypatch):
    root = make_project(tmp_path)
    walked = write(root / "env.toml", SIMPLE)
    from_var = write(tmp_path / "var.toml", SIMPLE)
    explicit = write(tmp_path / "explicit.toml", SIMPLE)
    assert find_env_file(start=root) == walked
    monkeypatch.setenv("NEMOTRON_ENV_FILE", str(from_var))
    assert find_env_file(start=root) == from_var
    assert find_env_file(explicit, start=root) == explicit


def test_explicit_missing_is_error(tmp_path, monkeypatch):
    missing = tmp_path / "nope.toml"
    with pytest.raises(EnvFileError) as e:
        find_env_file(missing)
    assert str(missing) in str(e.value) and "--env-file" in str(e.value)
    monkeypatch.setenv("NEMOTRON_ENV_FILE", str(missing))
    with pytest.raises(EnvFileError) as e:
        find_env_file()
    assert str(missing) in str(e.value) and "NEMOTRON_ENV_FILE" in str(e.value)


def test_parse_env_local_mode_needs_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_env(GlobalContext()) is None


def test_parse_env_missing_file_says_where_and_how(tmp_path, monkeypatch):
    root = make_project(tmp_path)
    sub = root / "sub"
    sub.mkdir()
    monkeypatch.chdir(sub)
    with pytest.raises(EnvFileError) as e:
        parse_env(GlobalContext(run="dev"))
    msg = str(e.value)
    assert str(sub / "env.toml") in msg and str(root / "env.toml") in msg
    assert str(tmp_path / "env.toml") not in msg  # never beyond the root
    assert "cp env.toml.example env.toml" in msg
    assert "--env-file" in msg and "NEMOTRON_ENV_FILE" in msg
    assert "'dev'" in msg


def test_parse_env_uses_ctx_env_file_and_batch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "elsewhere" / "my.toml", SIMPLE)
    prof = parse_env(GlobalContext(batch="dev", env_file=str(path)))
    assert prof is not None and prof.name == "dev" and prof.path == path
    assert prof.partition_for("batch") == "batch"
    assert prof.partition_for("run") == "interactive"
