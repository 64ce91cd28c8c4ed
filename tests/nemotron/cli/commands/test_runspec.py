"""Tests for ``nemotron runspec`` (show / validate / schema), in-process and as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nemo_runspec import parse
from nemo_runspec.spec.parser import clear_cache
from nemo_runspec.spec.schema import runspec_json_schema
from nemotron.cli.commands.runspec import app
from tests.import_probes import imported_after, nemotron_heavy_imports

RUN_APP = "from nemotron.cli.commands.runspec import app; app()"
WIDE = {"COLUMNS": "250", "NO_COLOR": "1", "NEMOTRON_DEBUG": ""}


def script(*toml_lines: str, body: str = "print('hi')\n") -> str:
    inner = "".join(("#\n" if not ln else f"# {ln}\n") for ln in toml_lines)
    return f"# /// script\n{inner}# ///\n{body}"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text().split("\n"), start=1):
        if needle in line:
            return number
    raise AssertionError(needle)


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def good(tmp_path) -> Path:
    return write(
        tmp_path / "recipes" / "pretrain" / "train.py",
        script(
            "[tool.runspec]",
            'name = "nano3/pretrain"',
            'image = "nvcr.io/nvidia/nemo:25.11"',
            "[tool.runspec.run]",
            'launch = "python"',
            "[tool.runspec.resources]",
            "nodes = 2",
            "[tool.runspec.env]",
            'NCCL_DEBUG = "INFO"',
            'HF_TOKEN = "hf_supersecretvalue123"',
        ),
    )


@pytest.fixture
def bad(tmp_path) -> Path:
    return write(
        tmp_path / "recipes" / "sft" / "train.py",
        script(
            "[tool.runspec]",
            'name = "nano3/sft"',
            'imgae = "x"',
            "[tool.runspec.resources]",
            "gpus_per_node = -2",
        ),
    )


# --------------------------------------------------------------------------- show

def test_show_table_lists_resolved_fields(runner, good):
    result = runner.invoke(app, ["show", str(good)], env=WIDE)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "nano3/pretrain" in out
    assert "nvcr.io/nvidia/nemo:25.11" in out
    assert "direct" in out  # 'python' normalised
    assert str(good.parent / "config") in out
    assert "missing" in out  # the config dir does not exist yet
    (good.parent / "config").mkdir()
    clear_cache()
    again = runner.invoke(app, ["show", str(good)], env=WIDE)
    assert again.exit_code == 0, again.output
    assert "exists" in again.stdout and "missing" not in again.stdout


def test_show_never_prints_secret_env_values(runner, good):
    for args in (["show", str(good)], ["show", "--json", str(good)]):
        result = runner.invoke(app, args, env=WIDE)
        assert result.exit_code == 0
        assert "hf_supersecretvalue123" not in result.output
        assert "HF_TOKEN" in result.output


def test_show_json_matches_parse(runner, good, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative path given from another directory
    rel = os.path.relpath(good, tmp_path)
    result = runner.invoke(app, ["show", "--json", rel], env=WIDE)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    spec = parse(good)
    assert data["name"] == spec.name
    assert data["run"]["launch"] == "direct"
    assert data["resources"] == {"nodes": 2, "gpus_per_node": 8}
    assert Path(data["config_dir"]) == good.resolve().parent / "config"
    assert data["config_dir_exists"] is False
    assert data["env"]["NCCL_DEBUG"] == "INFO"


def test_show_invalid_script_is_a_one_line_error(runner, bad):
    result = runner.invoke(app, ["show", str(bad)], env=WIDE)
    assert result.exit_code == 2
    assert result.stdout == ""
    err = result.stderr.strip()
    assert err.startswith(
        f"error: {bad}:{line_of(bad, 'imgae')}: unknown key 'imgae' in [tool.runspec] ("
    )
    assert err.endswith(")") and "\n" not in err
    assert "did you mean 'image'?" in err
    assert "Traceback" not in result.output


def test_show_missing_file(runner, tmp_path):
    result = runner.invoke(app, ["show", str(tmp_path / "nope.py")], env=WIDE)
    assert result.exit_code == 2
    assert "script not found" in result.stderr


# --------------------------------------------------------------------------- validate

def test_validate_directory_recursively(runner, tmp_path, good, bad):
    write(tmp_path / "recipes" / "plain.py", "print('no block here')\n")
    write(tmp_path / "recipes" / ".hidden" / "x.py", script("[tool.runspec]", "nodes = 0"))
    write(tmp_path / "recipes" / "notes.txt", script("[tool.runspec]"))
    unclosed = write(tmp_path / "recipes" / "deep" / "er" / "open.py",
                     "import os\n# /// script\n# [tool.runspec]\n")
    result = runner.invoke(app, ["validate", str(tmp_path / "recipes")], env=WIDE)
    assert result.exit_code == 1
    lines = result.stdout.strip().split("\n")
    assert lines[-1] == "3 files checked, 2 invalid"
    problems = lines[:-1]
    assert any(p.startswith(f"{bad}:{line_of(bad, 'imgae')}: unknown key 'imgae' in "
                            "[tool.runspec] (did you mean 'image'?; ") for p in problems)
    assert any(p.startswith(f"{bad}:{line_of(bad, 'gpus_per_node')}: 'resources.gpus_per_node'")
               for p in problems)
    assert any(p.startswith(f"{unclosed}:2: '# /// script' block opened at line 2 is never "
                            "closed with '# ///'") for p in problems)
    assert len(problems) == 3
    assert not any(str(good) in p for p in problems)
    assert not any(".hidden" in p or "plain.py" in p for p in problems)


def test_validate_all_good_exits_zero(runner, good, tmp_path):
    other = write(tmp_path / "b" / "run.py", script("[tool.runspec]", 'name = "b"'))
    result = runner.invoke(app, ["validate", str(good), str(other), str(good)], env=WIDE)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().split("\n") == ["2 files checked, 0 invalid"]


def test_validate_explicit_file_without_block(runner, tmp_path):
    plain = write(tmp_path / "plain.py", "x = 1\n")
    result = runner.invoke(app, ["validate", str(plain)], env=WIDE)
    assert result.exit_code == 1
    assert result.stdout.split("\n")[0].startswith(f"{plain}: no '# /// script' block")
    assert "1 files checked, 1 invalid" in result.stdout


def test_validate_missing_path_is_usage_error(runner, tmp_path, good):
    result = runner.invoke(app, ["validate", str(good), str(tmp_path / "ghost")], env=WIDE)
    assert result.exit_code == 2
    assert f"{tmp_path / 'ghost'}: no such file or directory" in result.stderr


# --------------------------------------------------------------------------- schema

def test_schema_command_prints_the_json_schema(runner):
    result = runner.invoke(app, ["schema"], env=WIDE)
    assert result.exit_code == 0
    assert json.loads(result.stdout) == runspec_json_schema()


# --------------------------------------------------------------------------- subprocess

def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **WIDE}
    return subprocess.run([sys.executable, "-c", RUN_APP, *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120)


def test_subprocess_validate_and_show(tmp_path, good, bad):
    result = _run("validate", "recipes", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.strip().endswith("2 files checked, 1 invalid")
    rel_bad = os.path.join("recipes", "sft", "train.py")
    assert f"{rel_bad}:{line_of(bad, 'imgae')}: unknown key 'imgae'" in result.stdout

    shown = _run("show", "--json", str(good))
    assert shown.returncode == 0
    assert json.loads(shown.stdout)["name"] == "nano3/pretrain"

    failed = _run("show", str(bad))
    assert failed.returncode == 2
    assert failed.stderr.startswith(f"error: {bad}:")
    assert "Traceback" not in failed.stderr


def test_subprocess_schema_and_light_import(tmp_path):
    result = _run("schema")
    assert result.returncode == 0
    assert json.loads(result.stdout)["additionalProperties"] is False
    out = imported_after(
        "import nemotron.cli.commands.runspec", ("nemo_run", "ray", "torch", "wandb", "omegaconf")
    )
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("args", [["runspec", "--help"], ["runspec", "show", "--help"],
                                  ["runspec", "validate", "-h"]])
def test_runspec_help_is_light(args, tmp_path):
    proc, heavy = nemotron_heavy_imports(args, tmp_path)
    assert "Usage" in proc.stdout
    assert heavy == []


def test_runspec_show_and_validate_through_nemotron_are_light(tmp_path):
    path = write(tmp_path / "train.py", script("[tool.runspec]", 'name = "light"', "", "[tool.runspec.resources]", "nodes = 3"))
    proc, heavy = nemotron_heavy_imports(["runspec", "show", str(path), "--json"], tmp_path)
    assert json.loads(proc.stdout)["resources"]["nodes"] == 3
    assert heavy == []
    proc, heavy = nemotron_heavy_imports(["runspec", "validate", str(tmp_path)], tmp_path)
    assert "1 files checked, 0 invalid" in proc.stdout
    assert heavy == []
