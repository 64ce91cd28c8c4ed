"""Tests for `nemotron env list/show` (src/nemotron/cli/commands/env.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nemotron.cli.commands.env import app
from tests.import_probes import nemotron_heavy_imports
from tests.nemotron_cli import NEMOTRON

ENV = """
[base]
executor = "slurm"
account = "acct"
partition = "batch"
description = "shared settings"
env_vars = { HF_TOKEN = "hf_secretsecretsecretsecret123", NCCL_DEBUG = "WARN" }

[dev]
extends = "base"
run_partition = "interactive"
nodes = 2

[loc]
description = "local box"

[wandb]
project = "p"

[cli]
default_profile = "dev"
"""

SECRET = "hf_secretsecretsecretsecret123"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    monkeypatch.delenv("NEMOTRON_ENV_FILE", raising=False)
    monkeypatch.delenv("NEMOTRON_DEBUG", raising=False)
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def env_file(tmp_path: Path) -> Path:
    path = tmp_path / "env.toml"
    path.write_text(textwrap.dedent(ENV).lstrip())
    return path


def line_no(path: Path, needle: str) -> int:
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(needle)


runner = CliRunner()


def test_list_shows_profiles_and_file(env_file):
    res = runner.invoke(app, ["list", "--env-file", str(env_file)])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert str(env_file) in out
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") >= 4}
    assert set(rows) >= {"base", "dev", "loc"} and "wandb" not in rows and "cli" not in rows
    assert "slurm" in rows["dev"] and "base" in rows["dev"]
    assert "local" in rows["loc"] and "local box" in rows["loc"]
    assert "[wandb]" in out


def test_list_discovers_from_cwd(env_file, monkeypatch):
    (env_file.parent / ".git").mkdir()
    sub = env_file.parent / "a"
    sub.mkdir()
    monkeypatch.chdir(sub)
    res = runner.invoke(app, ["list"])
    assert res.exit_code == 0, res.output
    assert str(env_file) in res.stdout


def test_show_values_sources_and_redaction(env_file, monkeypatch):
    monkeypatch.chdir(env_file.parent)
    res = runner.invoke(app, ["show", "dev", "--env-file", str(env_file)])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert SECRET not in out
    lines = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") >= 3}
    acct = line_no(env_file, 'account = "acct"')
    assert f"env.toml:{acct} [base]" in lines["account"]
    assert f"env.toml:{line_no(env_file, 'nodes = 2')} [dev]" in lines["nodes"]
    assert "***" in lines["env_vars.HF_TOKEN"]
    assert "WARN" in lines["env_vars.NCCL_DEBUG"]
    assert "(default)" in lines["check_uncommitted"]
    assert "dev -> base" in out


def test_show_json(env_file):
    res = runner.invoke(app, ["show", "dev", "--json", "--env-file", str(env_file)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["chain"] == ["dev", "base"]
    assert data["values"]["nodes"] == 2 and data["values"]["run_partition"] == "interactive"
    assert SECRET not in res.stdout
    assert data["sources"]["partition"].endswith(f":{line_no(env_file, 'partition = ')} [base]")
    assert data["defaults"]["dependency_type"] == "afterok"


def test_show_default_profile_from_cli_section(env_file):
    res = runner.invoke(app, ["show", "--json", "--env-file", str(env_file)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["name"] == "dev"


@pytest.mark.parametrize(
    ("args", "parts"),
    [
        (["show", "deb"], ["unknown profile 'deb'", "did you mean 'dev'"]),
        (["show", "wandb"], ["special section"]),
    ],
)
def test_show_errors_one_line_exit_2(env_file, args, parts):
    res = runner.invoke(app, [*args, "--env-file", str(env_file)])
    assert res.exit_code == 2
    err = res.stderr.strip()
    assert err.startswith("error: ") and "\n" not in err
    for p in parts:
        assert p in err
    assert "Traceback" not in res.output


def test_missing_env_file_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["list", "--env-file", str(tmp_path / "none.toml")])
    assert res.exit_code == 2 and str(tmp_path / "none.toml") in res.stderr
    (tmp_path / ".git").mkdir()
    res = runner.invoke(app, ["show", "dev"])
    assert res.exit_code == 2
    assert "cp env.toml.example env.toml" in res.stderr and str(tmp_path / "env.toml") in res.stderr


def test_list_reports_broken_profiles(tmp_path):
    path = tmp_path / "env.toml"
    path.write_text('[ok]\nnodes = 1\n[bad]\nextends = "okk"\n')
    res = runner.invoke(app, ["list", "--env-file", str(path)])
    assert res.exit_code == 2
    assert "ok" in res.stdout and "bad" in res.stdout
    assert f"error: {path}:4:" in res.stderr and "did you mean 'ok'" in res.stderr


def test_subprocess_error_and_success(env_file, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[p]\nnodes = = 1\n")
    code = "import sys; from nemotron.cli.commands.env import app; sys.argv[0] = 'env'; app()"
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("NEMOTRON_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-c", code, "show", "p", "--env-file", str(bad)],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith(f"error: {bad}:2: invalid TOML")
    assert "Traceback" not in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-c", code, "show", "dev", "--json", "--env-file", str(env_file)],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["values"]["account"] == "acct"
    assert SECRET not in proc.stdout


def test_debug_shows_traceback(env_file, tmp_path):
    code = "from nemotron.cli.commands.env import app; app()"
    env = {**os.environ, "NEMOTRON_DEBUG": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", code, "show", "nope", "--env-file", str(env_file)],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert proc.returncode != 0 and "Traceback" in proc.stderr and "EnvFileError" in proc.stderr


# --- through the real `nemotron` entry point (global options are stripped from argv) ---



def _nemotron(args: list[str], cwd: Path, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", **extra_env}
    env.pop("NEMOTRON_DEBUG", None)
    if "NEMOTRON_ENV_FILE" not in extra_env:
        env.pop("NEMOTRON_ENV_FILE", None)
    return subprocess.run([str(NEMOTRON), *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


@pytest.mark.parametrize(
    "args",
    [
        ["env", "list", "--env-file", "{f}"],
        ["--env-file", "{f}", "env", "list"],
        ["env", "list", "--env-file={f}"],
    ],
)
def test_nemotron_env_list_global_env_file(env_file, tmp_path, args):
    # run from a directory with no env.toml: only the option can find the file
    work = tmp_path / "elsewhere"
    work.mkdir()
    (work / ".git").mkdir()  # project root marker: discovery stops here
    proc = _nemotron([a.format(f=env_file) for a in args], cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert f"env file: {env_file}" in proc.stdout
    for name in ("base", "dev", "loc"):
        assert name in proc.stdout


def test_nemotron_env_show_global_env_file(env_file, tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    (work / ".git").mkdir()
    proc = _nemotron(["--env-file", str(env_file), "env", "show", "dev", "--json"], cwd=work)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["values"]["nodes"] == 2 and data["values"]["account"] == "acct"
    assert SECRET not in proc.stdout


def test_nemotron_env_list_from_env_var(env_file, tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    (work / ".git").mkdir()
    proc = _nemotron(["env", "list"], cwd=work, NEMOTRON_ENV_FILE=str(env_file))
    assert proc.returncode == 0, proc.stderr
    assert f"env file: {env_file}" in proc.stdout
    proc = _nemotron(["env", "list"], cwd=work)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "no env.toml" in proc.stderr


def test_nemotron_missing_global_env_file_is_one_line_error(tmp_path):
    missing = tmp_path / "nope.toml"
    proc = _nemotron(["env", "show", "dev", "--env-file", str(missing)], cwd=tmp_path)
    assert proc.returncode == 2
    assert str(missing) in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("args", [["env", "--help"], ["runspec", "--help"], ["env", "show", "--help"]])
def test_help_imports_no_heavy_modules(args, tmp_path):
    proc, heavy = nemotron_heavy_imports(args, tmp_path)
    assert "Usage" in proc.stdout
    assert heavy == []  # none of the heavy modules was imported


def test_env_list_imports_no_omegaconf_or_nemo_run(env_file, tmp_path):
    proc, heavy = nemotron_heavy_imports(["env", "list", "--env-file", str(env_file)], tmp_path)
    assert "dev" in proc.stdout
    assert "omegaconf" not in heavy and "nemo_run" not in heavy
