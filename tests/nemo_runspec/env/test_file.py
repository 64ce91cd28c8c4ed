"""Tests for nemo_runspec.env.file (loading, ${oc.env:...})."""

from __future__ import annotations

from pathlib import Path

import pytest

from nemo_runspec.env import (
    load_env_file,
    load_env_profile,
)
from nemo_runspec.errors import EnvFileError
from tests.nemo_runspec.env.env_toml import SIMPLE, line_no, write

REPO = Path(__file__).resolve().parents[3]


# --------------------------------------------------------------------------- loading


def test_load_env_file_profiles_sections_lines(tmp_path):
    path = write(
        tmp_path / "env.toml",
        SIMPLE
        + """
[wandb]
project = "p"

[cache]
dir = "/tmp/c"
""",
    )
    ef = load_env_file(path)
    assert set(ef.profiles) == {"base", "dev"}
    assert ef.sections["wandb"] == {"project": "p"}
    assert ef.sections["artifacts"] == {} and ef.sections["cli"] == {}
    assert ef.line_of("dev", "nodes") == line_no(path, "nodes = 2")
    assert ef.line_of("base", "env_vars", "HF_HOME") == line_no(path, "HF_HOME")
    assert ef.line_of("dev") == line_no(path, "[dev]")


def test_line_map_survives_multiline_values(tmp_path):
    path = write(
        tmp_path / "env.toml",
        '''
[a]
startup_commands = [
  "echo [not.a.table]",
  "x = 1",
]
description = """
fake = "key"
[fake]
"""
account = 'x'   # comment [z]
"quoted.key" = 1

[a.env_vars]
K = "v"
''',
    )
    ef = load_env_file(path)
    assert ef.line_of("a", "account") == line_no(path, "account = 'x'")
    assert ef.line_of("a", "startup_commands") == line_no(path, "startup_commands")
    assert ("a", "fake") not in ef.lines and ("fake",) not in ef.lines
    assert ef.line_of("a", "quoted.key") == line_no(path, '"quoted.key"')
    assert ef.line_of("a", "env_vars", "K") == line_no(path, 'K = "v"')


def test_toml_syntax_error_has_path_and_line(tmp_path):
    path = write(tmp_path / "env.toml", '[a]\nexecutor = "slurm"\nnodes = = 2\n')
    with pytest.raises(EnvFileError) as e:
        load_env_file(path)
    assert str(e.value).startswith(f"{path}:3: invalid TOML")


def test_top_level_key_outside_table(tmp_path):
    path = write(tmp_path / "env.toml", 'executor = "slurm"\n[a]\n')
    with pytest.raises(EnvFileError) as e:
        load_env_file(path)
    assert str(e.value).startswith(f"{path}:1:") and "'executor'" in str(e.value)


# --------------------------------------------------------------------------- interpolation


def test_oc_env_resolves_and_defaults(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_ACCT", "team-a")
    monkeypatch.delenv("NOT_SET_X", raising=False)
    path = write(
        tmp_path / "env.toml",
        """
        [p]
        account = "${oc.env:MY_ACCT}"
        job_dir = "/x/${oc.env:NOT_SET_X,fallback}/y"
        remote_job_dir = "${oc.env:NOT_SET_X,'quoted'}"
        description = "\\\\${oc.env:MY_ACCT} stays"
        env_vars = { A = "pre-${oc.env:MY_ACCT}" }
        """,
    )
    prof = load_env_profile("p", path)
    assert prof.values["account"] == "team-a"
    assert prof.values["job_dir"] == "/x/fallback/y"
    assert prof.values["remote_job_dir"] == "quoted"
    assert prof.values["description"] == "${oc.env:MY_ACCT} stays"
    assert prof.values["env_vars"]["A"] == "pre-team-a"


def test_oc_env_missing_names_file_line_key(tmp_path, monkeypatch):
    monkeypatch.delenv("NOT_SET_Y", raising=False)
    path = write(tmp_path / "env.toml", '[p]\ndescription = "d"\naccount = "${oc.env:NOT_SET_Y}"\n')
    with pytest.raises(EnvFileError) as e:
        load_env_profile("p", path)
    msg = str(e.value)
    assert msg.startswith(f"{path}:3:") and "NOT_SET_Y" in msg and "'account'" in msg


def test_shell_syntax_left_untouched(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", "/should/not/appear")
    text = [
        "echo $HOME",
        "cd ${HOME}/x",
        "export H=$(hostname)",
        "echo ${SLURM_JOB_ID:-none}",
    ]
    path = write(
        tmp_path / "env.toml",
        "[p]\nstartup_commands = [\n"
        + "".join(f"  {s!r},\n".replace("'", '"') for s in text)
        + ']\nenv_vars = { D = "${HOME}/d", E = "$USER" }\n',
    )
    prof = load_env_profile("p", path)
    assert prof.values["startup_commands"] == text
    assert prof.values["env_vars"] == {"D": "${HOME}/d", "E": "$USER"}


def test_unused_profile_interpolation_not_resolved(tmp_path, monkeypatch):
    monkeypatch.delenv("NOT_SET_Z", raising=False)
    path = write(tmp_path / "env.toml", '[a]\naccount = "${oc.env:NOT_SET_Z}"\n[b]\nnodes = 1\n')
    assert load_env_profile("b", path).values == {"nodes": 1}
