"""Recipe help panels, failed-import reporting, and what --help imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.nemotron_cli import NEMOTRON

ROOT = Path(__file__).resolve().parents[3]
PY = sys.executable
CONFIG_DIR = ROOT / "src/nemotron/recipes/nano3/stage0_pretrain/config"
FORBIDDEN = ("nemo_run", "ray", "torch", "wandb", "omegaconf", "pydantic")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NEMOTRON_ENV_FILE", "NEMOTRON_DEBUG")}
    env["COLUMNS"] = "200"
    env.update(extra)
    return env


def _run(args, *, cwd, **env):
    return subprocess.run([str(NEMOTRON), *args], cwd=cwd, env=_env(**env), capture_output=True,
                          text=True, timeout=60)


@pytest.fixture()
def env_toml(tmp_path: Path) -> Path:
    path = tmp_path / "cfg" / "env.toml"
    path.parent.mkdir()
    path.write_text(textwrap.dedent("""
        [base]
        executor = "slurm"
        account = "acct"

        [dev]
        extends = "base"
        partition = "dev"

        [laptop]
        executor = "local"

        [wandb]
        project = "p"
    """))
    return path


def test_recipe_help_lists_configs_overrides_examples(tmp_path):
    proc = _run(["nano3", "pretrain", "--help"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Usage: nemotron nano3 pretrain" in out
    yaml_names = sorted(p.stem for p in CONFIG_DIR.glob("*.yaml"))
    assert yaml_names  # the recipe ships configs
    for name in yaml_names:
        assert f" {name} " in out or f"│ {name}" in out
    default_line = next(line for line in out.splitlines() if "(default)" in line)
    assert "default" in default_line.replace("(default)", "")
    for syntax in ("key=value", "+key=value", "~key", "run.env.KEY=value", "-- args"):
        assert syntax in out
    for option in ("--config", "--run", "--batch", "--dry-run", "--force-squash", "--env-file", "--debug"):
        assert option in out
    assert "Examples" in out and "nemotron nano3 pretrain -c tiny --dry-run" in out
    assert str(tmp_path / "env.toml") in out  # where it looked for env.toml


def test_short_help_option(tmp_path):
    proc = _run(["nano3", "sft", "-h"], cwd=tmp_path)
    assert proc.returncode == 0 and "Usage: nemotron nano3 sft" in proc.stdout


@pytest.mark.parametrize("how", ["flag", "flag-after", "envvar"])
def test_help_lists_profiles_with_executor(how, env_toml, tmp_path):
    if how == "flag":
        proc = _run(["--env-file", str(env_toml), "nano3", "rl", "--help"], cwd=tmp_path)
    elif how == "flag-after":
        proc = _run(["nano3", "rl", "--help", f"--env-file={env_toml}"], cwd=tmp_path)
    else:
        proc = _run(["nano3", "rl", "--help"], cwd=tmp_path, NEMOTRON_ENV_FILE=str(env_toml))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()

    def row(name):
        return next(line for line in lines if f"│ {name} " in line)

    assert "executor=slurm" in row("base")
    assert "executor=slurm" in row("dev")  # inherited through extends
    assert "executor=local" in row("laptop")
    assert not any("│ wandb " in line for line in lines)
    assert str(env_toml) in proc.stdout


def test_help_survives_invalid_env_toml(tmp_path):
    bad = tmp_path / "env.toml"
    bad.write_text("[dev\nexecutor = 'slurm'\n")
    proc = _run(["nano3", "pretrain", "--help"], cwd=tmp_path, NEMOTRON_ENV_FILE=str(bad))
    assert proc.returncode == 0, proc.stderr
    assert "error" in proc.stdout and str(bad) in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_help_discovers_env_toml_walking_up(env_toml, tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "env.toml").write_text(env_toml.read_text())
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    proc = _run(["nano3", "pretrain", "--help"], cwd=sub)
    assert proc.returncode == 0, proc.stderr
    assert "executor=local" in proc.stdout and str(tmp_path / "env.toml") in proc.stdout


def test_cli_runner_help_panels(tmp_path, monkeypatch):
    from nemotron.cli.bin.nemotron import app

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["nano3", "data", "prep", "pretrain", "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage: nemotron nano3 data prep pretrain" in result.stdout
    data_prep_dir = ROOT / "src/nemotron/recipes/nano3/stage0_pretrain/config/data_prep"
    for p in data_prep_dir.glob("*.yaml"):
        assert p.stem in result.stdout


def test_root_help_lists_groups(tmp_path):
    proc = _run(["--help"], cwd=tmp_path)
    assert proc.returncode == 0
    for group in ("nano3", "runspec", "env"):
        assert f"│ {group} " in proc.stdout
    assert "failed to load" not in proc.stdout + proc.stderr
    nano3 = _run(["nano3", "--help"], cwd=tmp_path)
    assert nano3.returncode == 0, nano3.stderr
    for cmd in ("pretrain", "sft", "rl", "data"):
        assert f"│ {cmd} " in nano3.stdout


def _app_with_broken_group(tmp_path: Path, argv: list[str]) -> subprocess.CompletedProcess:
    (tmp_path / "broken_group.py").write_text("raise RuntimeError('boom: broken on purpose')\n")
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from nemotron.cli.bin import nemotron
        nemotron.GROUPS["broken"] = ("broken_group", "app", False)
        nemotron.main()
    """)
    return subprocess.run([PY, "-c", script, *argv], capture_output=True, text=True, timeout=60,
                          env=_env(), cwd=tmp_path)


def test_failed_group_is_reported_not_dropped(tmp_path):
    proc = _app_with_broken_group(tmp_path, ["--help"])
    assert proc.returncode == 0
    broken_row = next(line for line in proc.stdout.splitlines() if "│ broken " in line)
    assert "failed to load" in broken_row and "boom: broken on purpose" in broken_row
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "broken" in warnings[0] and "boom" in warnings[0]
    assert "│ nano3 " in proc.stdout  # the others still load

    proc = _app_with_broken_group(tmp_path, ["broken", "anything", "x=1"])
    assert proc.returncode == 1
    assert "error: " in proc.stderr and "failed to load" in proc.stderr and "boom" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_failed_group_cli_runner(tmp_path, monkeypatch):
    from nemotron.cli.bin import nemotron

    monkeypatch.setitem(nemotron.GROUPS, "ghost", ("nemotron.no_such_module_xyz", "app", False))
    result = CliRunner().invoke(nemotron.app, ["ghost"])
    assert result.exit_code == 1
    assert "failed to load" in result.stderr and "no_such_module_xyz" in result.stderr


def _modules_after(argv: list[str]) -> set[str]:
    script = textwrap.dedent(f"""
        import contextlib, io, json, sys
        from nemotron.cli.bin.nemotron import app
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                app({argv!r}, prog_name="nemotron")
        except SystemExit as exc:
            assert exc.code in (0, None), exc.code
        assert "Usage" in buf.getvalue()
        print(json.dumps(sorted(sys.modules)))
    """)
    proc = subprocess.run([PY, "-c", script], capture_output=True, text=True, timeout=60, env=_env())
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("argv", [["--help"], ["nano3", "pretrain", "--help"], ["nano3", "rl", "-h"],
                                  ["nano3", "data", "prep", "sft", "--help"]])
def test_help_imports_nothing_heavy(argv):
    modules = _modules_after(argv)
    assert "nemotron.cli.bin.nemotron" in modules
    heavy = sorted(m for m in modules if m.split(".")[0] in FORBIDDEN)
    assert heavy == []
