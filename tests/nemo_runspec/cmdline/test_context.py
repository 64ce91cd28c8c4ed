"""Global option parsing, override/passthrough splitting and main() error handling."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from nemo_runspec.cli_context import split_global_args, split_unknown_args
from nemo_runspec.errors import CLIUsageError
from nemo_runspec.recipe_config import recipe_config_from
from tests.nemotron_cli import NEMOTRON

ROOT = Path(__file__).resolve().parents[3]
PY = sys.executable


# ---------------------------------------------------------------- split_global_args

@pytest.mark.parametrize(
    "argv, field, value",
    [
        (["-c", "tiny", "nano3", "pretrain"], "config", "tiny"),
        (["nano3", "pretrain", "-c", "tiny"], "config", "tiny"),
        (["nano3", "-c=tiny", "pretrain"], "config", "tiny"),
        (["nano3", "pretrain", "-ctiny"], "config", "tiny"),
        (["nano3", "pretrain", "--config", "a/b.yaml"], "config", "a/b.yaml"),
        (["nano3", "pretrain", "--config=a/b.yaml"], "config", "a/b.yaml"),
        (["--run", "dev", "nano3", "pretrain"], "run", "dev"),
        (["nano3", "pretrain", "--run=dev"], "run", "dev"),
        (["nano3", "pretrain", "-r", "dev"], "run", "dev"),
        (["nano3", "pretrain", "-r=dev"], "run", "dev"),
        (["nano3", "pretrain", "-rdev"], "run", "dev"),
        (["nano3", "pretrain", "--batch", "prod"], "batch", "prod"),
        (["-b=prod", "nano3", "pretrain"], "batch", "prod"),
        (["nano3", "pretrain", "--env-file", "/x/env.toml"], "env_file", "/x/env.toml"),
        (["--env-file=/x/env.toml", "nano3", "pretrain"], "env_file", "/x/env.toml"),
        (["nano3", "pretrain", "-d"], "dry_run", True),
        (["--dry-run", "nano3", "pretrain"], "dry_run", True),
        (["nano3", "pretrain", "--force-squash"], "force_squash", True),
        (["nano3", "--debug", "pretrain"], "debug", True),
    ],
)
def test_every_form_and_position(argv, field, value):
    ctx, rest = split_global_args(argv)
    assert getattr(ctx, field) == value
    assert rest == ["nano3", "pretrain"]
    assert ctx.argv == argv


def test_short_cluster_flag_then_value():
    ctx, rest = split_global_args(["nano3", "pretrain", "-dc", "tiny", "x=1"])
    assert (ctx.dry_run, ctx.config, rest) == (True, "tiny", ["nano3", "pretrain", "x=1"])


def test_mode_profile_attached():
    ctx, _ = split_global_args(["--run", "dev"])
    assert (ctx.mode, ctx.profile, ctx.attached) == ("run", "dev", True)
    ctx, _ = split_global_args(["--batch", "prod"])
    assert (ctx.mode, ctx.profile, ctx.attached) == ("batch", "prod", False)
    ctx, _ = split_global_args([])
    assert (ctx.mode, ctx.profile, ctx.attached) == ("local", None, True)


def test_double_dash_is_verbatim_passthrough():
    ctx, rest = split_global_args(["nano3", "pretrain", "a=1", "--", "-c", "x", "--run=y", "b=2", "--"])
    assert ctx.config is None and ctx.run is None
    assert rest == ["nano3", "pretrain", "a=1"]
    assert ctx.passthrough == ["-c", "x", "--run=y", "b=2", "--"]


def test_unknown_options_stay_in_order():
    _, rest = split_global_args(["nano3", "pretrain", "--seed", "3", "-x", "-c", "tiny", "--lr=1"])
    assert rest == ["nano3", "pretrain", "--seed", "3", "-x", "--lr=1"]


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["nano3", "--run"], "--run needs a profile name"),
        (["--run", "--dry-run", "nano3"], "--run needs a profile name"),
        (["-c", "-d"], "-c needs a config name or path"),
        (["-r"], "-r needs a profile name"),
        (["--batch="], "--batch needs a profile name"),
        (["--env-file"], "--env-file needs a path"),
        (["--config", "--", "x"], "--config needs a config name or path"),
        (["--run", "a", "--batch", "b"], "--run and --batch cannot be used together"),
        (["-c", "a", "--config=b"], "--config given twice"),
        (["-r", "a", "x", "--run", "b"], "--run given twice"),
        (["--dry-run=yes"], "--dry-run takes no value"),
    ],
)
def test_usage_errors(argv, needle):
    with pytest.raises(CLIUsageError) as info:
        split_global_args(argv)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_same_value_twice_is_fine():
    ctx, _ = split_global_args(["-c", "tiny", "nano3", "--config=tiny"])
    assert ctx.config == "tiny"


# ---------------------------------------------------------------- split_unknown_args

def test_overrides_vs_passthrough():
    words = ["a.b=1", "+new.key=x", "++c=3", "~d.e", "--flag", "val", "-x", "path/a=b", "=x", "plain", "k="]
    overrides, passthrough = split_unknown_args(words)
    assert overrides == ["a.b=1", "+new.key=x", "++c=3", "~d.e", "k="]
    assert passthrough == ["--flag", "val", "-x", "path/a=b", "=x", "plain"]


def test_recipe_config_combines_words_and_double_dash():
    gctx, rest = split_global_args(["nano3", "pretrain", "x=1", "--s", "--run", "dev", "--", "y=2", "--t"])
    cfg = recipe_config_from(gctx, rest[2:])
    assert cfg.overrides == ["x=1"]
    assert cfg.passthrough == ["--s", "y=2", "--t"]
    assert (cfg.mode, cfg.profile, cfg.attached, cfg.dry_run) == ("run", "dev", True, False)
    assert cfg.ctx.overrides == cfg.overrides and cfg.ctx.passthrough == cfg.passthrough


# ---------------------------------------------------------------- through the app

def _job_yaml(output: str) -> dict:
    """The job.yaml block of a dry-run output."""
    start = output.index("Job config (job.yaml)")
    end = output.index("Train config (train.yaml")
    return yaml.safe_load(output[start:end].split("\n", 1)[1])


@pytest.fixture()
def env_toml(tmp_path: Path) -> Path:
    path = tmp_path / "env.toml"
    path.write_text(textwrap.dedent("""
        [dev]
        executor = "slurm"
        account = "acct"
        partition = "batch"
        nodes = 2
    """))
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["--env-file={env}", "-d", "--run", "dev", "nano3", "pretrain", "train.train_iters=7", "--seed", "1"],
        ["nano3", "pretrain", "train.train_iters=7", "--run=dev", "--seed", "1", "--dry-run", "--env-file", "{env}"],
        ["nano3", "-r", "dev", "pretrain", "-d", "train.train_iters=7", "--env-file={env}", "--", "--seed", "1"],
    ],
)
def test_cli_runner_globals_anywhere(args, env_toml, tmp_path, monkeypatch):
    from nemotron.cli.bin.nemotron import app

    monkeypatch.chdir(tmp_path)
    args = [a.replace("{env}", str(env_toml)) for a in args]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    job = _job_yaml(result.stdout)
    assert job["run"]["mode"] == "run"
    assert job["run"]["profile"] == "dev"
    assert job["run"]["cli"]["overrides"] == ["train.train_iters=7"]
    assert job["run"]["cli"]["passthrough"] == ["--seed", "1"]
    assert job["train"]["train_iters"] == 7
    assert job["run"]["env"]["nodes"] == 2


def _run(args, *, cwd, env=None, timeout=60):
    full = {k: v for k, v in os.environ.items() if k not in ("NEMOTRON_ENV_FILE", "NEMOTRON_DEBUG")}
    full.update(env or {})
    return subprocess.run([str(NEMOTRON), *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize(
    "args, needle",
    [
        (["nano3", "pretrain", "--run"], "error: --run needs a profile name"),
        (["nano3", "pretrain", "--run", "--dry-run"], "error: --run needs a profile name"),
        (["nano3", "pretrain", "-c", "-d"], "error: -c needs a config name or path"),
        (["-r", "a", "nano3", "pretrain", "-b", "b"], "error: --run and --batch cannot be used together"),
        (["nano3", "pretrain", "-c", "a", "-c", "b"], "error: --config given twice"),
        (["nano3", "pretrain", "-c", "no_such_config", "-d"], "error: "),
    ],
)
def test_subprocess_usage_errors_exit_2(args, needle, tmp_path):
    proc = _run(args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert len([line for line in proc.stderr.splitlines() if line.startswith("error:")]) == 1


def test_debug_shows_traceback(tmp_path):
    proc = _run(["nano3", "pretrain", "--run", "--debug"], cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" in proc.stderr
    assert "error: --run needs a profile name" in proc.stderr
    proc = _run(["nano3", "pretrain", "--run", "a", "--batch", "b", "--debug"], cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" in proc.stderr
    proc = _run(["nano3", "pretrain", "--run", "a", "--batch", "b"], cwd=tmp_path, env={"NEMOTRON_DEBUG": "1"})
    assert proc.returncode == 2 and "Traceback" in proc.stderr


def test_unknown_profile_is_exit_2(env_toml, tmp_path):
    proc = _run(["nano3", "pretrain", "--run", "dve", "-d", "--env-file", str(env_toml)], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "dev" in proc.stderr and "Traceback" not in proc.stderr


def test_keyboard_interrupt_exits_130(tmp_path):
    mod = tmp_path / "interrupting.py"
    mod.write_text(textwrap.dedent("""
        import typer
        app = typer.Typer()
        @app.command()
        def go():
            raise KeyboardInterrupt
    """))
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from nemotron.cli.bin import nemotron
        nemotron.GROUPS["interrupting"] = ("interrupting", "app", False)
        nemotron.main()
    """)
    proc = subprocess.run([PY, "-c", script, "interrupting"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "args, needle",
    [
        (["nano4"], "No such command 'nano4'"),
        (["nano3", "pretrian"], "did you mean 'pretrain'"),
    ],
)
def test_unknown_command_is_one_line(args, needle, tmp_path):
    proc = _run(args, cwd=tmp_path)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert needle.lower() in lines[0].lower()


def test_group_without_command_shows_help(tmp_path):
    proc = _run(["nano3"], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr  # a group needs a command: usage error, like click
    assert "Usage: nemotron nano3" in proc.stdout + proc.stderr
    assert "pretrain" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_force_squash_is_accepted_and_says_it_has_no_effect(tmp_path):
    proc = _run(["nano3", "pretrain", "-c", "tiny", "--force-squash", "--dry-run"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "--force-squash has no effect" in proc.stderr


@pytest.mark.parametrize(
    ("word", "suggestion"),
    [("--dryrun", "--dry-run"), ("--dry_run", "--dry-run"), ("--Dry-run", "--dry-run"),
     ("--runn", "--run"), ("--bach", "--batch"), ("--env_file", "--env-file")],
)
def test_mistyped_global_is_an_error_not_a_script_argument(word, suggestion, tmp_path):
    home = tmp_path / "home"  # where a local run would write its job dir (and train.yaml)
    proc = _run(["nano3", "pretrain", "-c", "tiny", word, "x"], cwd=tmp_path, env={"NEMOTRON_HOME": str(home)})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"did you mean '{suggestion}'" in proc.stderr and "put it after --" in proc.stderr
    assert not list(home.rglob("train.yaml")) and not list(tmp_path.rglob("train.yaml"))  # nothing ran


def test_near_global_after_double_dash_passes_through():
    from nemo_runspec.cli_context import split_unknown_args

    assert split_unknown_args(["--seed", "1", "a.b=2"]) == (["a.b=2"], ["--seed", "1"])


def test_kit_is_a_group_so_a_typo_is_an_unknown_command(tmp_path):
    proc = _run(["kit", "preflght"], cwd=tmp_path)
    assert proc.returncode == 2 and "did you mean 'preflight'" in proc.stderr.lower()


@pytest.mark.parametrize(("word", "suggestion"), [("--dry", "--dry-run"), ("--env", "--env-file"),
                                                  ("--conf", "--config")])
def test_abbreviated_global_is_an_error(word, suggestion, tmp_path):
    proc = _run(["nano3", "pretrain", "-c", "tiny", word, "x"], cwd=tmp_path)
    assert proc.returncode == 2 and f"did you mean '{suggestion}'" in proc.stderr


@pytest.mark.parametrize("flag", ["--batch-size", "--run-name", "--debugger", "--seed"])
def test_ordinary_script_flags_still_pass_through(flag):
    from nemo_runspec.cli_context import split_unknown_args

    assert split_unknown_args([flag, "3"]) == ([], [flag, "3"])


def test_bare_profile_name_is_refused_as_a_forgotten_run(env_toml, tmp_path):
    proc = _run(["kit", "preflight", "dev", "--env-file", str(env_toml)], cwd=tmp_path)
    assert proc.returncode == 2
    assert "it is an env.toml profile" in proc.stderr and "--run dev" in proc.stderr
    proc = _run(["kit", "preflight", "-d", "--env-file", str(env_toml), "--", "dev"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr  # after -- it is the script's business


def test_recipe_scripts_reject_unknown_arguments(tmp_path):
    from nemo_runspec.artifacts.registry import ArtifactRegistry

    (tmp_path / "data").mkdir()  # the input the command checks first; the script stops before reading it
    ArtifactRegistry(tmp_path / "h" / "artifacts").publish("nano3-pretrain-data-tiny", tmp_path / "data")
    proc = _run(["nano3", "pretrain", "-c", "tiny", "--", "--no-such-flag"], cwd=tmp_path,
                env={"NEMOTRON_HOME": str(tmp_path / "h")})
    assert proc.returncode == 2 and "unknown argument(s) --no-such-flag" in proc.stderr
