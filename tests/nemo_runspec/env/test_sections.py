"""Tests for nemo_runspec.env.sections."""

from __future__ import annotations

from pathlib import Path

import pytest

from nemo_runspec.env import (
    get_artifacts_config,
    get_cache_config,
    get_cli_config,
    get_wandb_config,
    load_env_file,
)
from nemo_runspec.errors import EnvFileError
from tests.nemo_runspec.env.env_toml import line_no, write

REPO = Path(__file__).resolve().parents[3]


# --------------------------------------------------------------------------- special sections


SECTIONS = """
[wandb]
entity = "team"
project = "${oc.env:WB_PROJECT,nemotron}"
tags = ["a"]

[artifacts]
backend = "fsspec"
root = "s3://bucket/art"

[cache]
git_dir = "/c/git"

[cli]
default_profile = "dev"

[dev]
nodes = 1
"""


def test_sections_validated_and_defaults(tmp_path, monkeypatch):
    monkeypatch.delenv("WB_PROJECT", raising=False)
    path = write(tmp_path / "env.toml", SECTIONS)
    assert get_wandb_config(path) == {
        "entity": "team",
        "project": "nemotron",
        "tags": ["a"],
        "api_key_env": "WANDB_API_KEY",
    }
    assert get_artifacts_config(path) == {"backend": "fsspec", "root": "s3://bucket/art"}
    assert get_cache_config(path) == {"git_dir": "/c/git"}
    assert get_cli_config(load_env_file(path)) == {"default_profile": "dev"}


def test_sections_absent_or_no_file(tmp_path, monkeypatch):
    path = write(tmp_path / "env.toml", "[dev]\nnodes = 1\n")
    assert get_wandb_config(path) == {} and get_cache_config(path) == {}
    monkeypatch.chdir(tmp_path / "..")
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    assert get_artifacts_config() == {}


@pytest.mark.parametrize(
    ("text", "needle", "parts"),
    [
        ('[wandb]\nprojet = "p"\n', "projet", ["unknown key 'projet'", "[wandb]", "did you mean 'project'"]),
        ('[wandb]\napi_key = "abc"\n', "api_key", ["unknown key 'api_key'", "api_key_env"]),
        ('[wandb]\nmode = "sometimes"\n', "mode", ["'mode'", "'offline'"]),
        ('[artifacts]\nbackend = "s4"\n', "backend", ["'backend'", "'fsspec'"]),
        ('[cache]\ngitdir = "/x"\n', "gitdir", ["did you mean 'git_dir'"]),
        ('[cli]\ndefault_profile = "dve"\n[dev]\n', "default_profile", ["'dve'", "did you mean 'dev'"]),
    ],
)
def test_section_errors(tmp_path, text, needle, parts):
    path = write(tmp_path / "env.toml", text)
    getter = {
        "[wandb]": get_wandb_config,
        "[artifacts]": get_artifacts_config,
        "[cache]": get_cache_config,
        "[cli]": get_cli_config,
    }[text.split("\n")[0]]
    with pytest.raises(EnvFileError) as e:
        getter(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}:{line_no(path, needle)}:"), msg
    for p in parts:
        assert p in msg, (p, msg)
