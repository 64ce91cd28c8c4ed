"""RunConfig: the typed request of a recipe run, compiled by compile_job and given back
by CompiledJob.run_config (the effective one, after the profile's detach/dry_run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nemo_runspec import parse
from nemo_runspec.errors import CLIUsageError
from nemo_runspec.job.compiled import compile_job
from nemo_runspec.job.run_config import RunConfig

SCRIPT = """\
# /// script
# [tool.runspec]
# schema = "1"
# name = "team/hello"
# [tool.runspec.run]
# launch = "direct"
# [tool.runspec.resources]
# nodes = 1
# gpus_per_node = 0
# ///
"""


def make_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A recipe "team/hello" with configs default and tiny and a detaching profile "dev", in tmp_path."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "default.yaml").write_text("greeting: hi\nsteps: 1\n")
    (tmp_path / "config" / "tiny.yaml").write_text("defaults: [default]\nsteps: 2\n")
    (tmp_path / "hello.py").write_text(SCRIPT)
    (tmp_path / "env.toml").write_text('[dev]\nexecutor = "slurm"\naccount = "a"\ndetach = true\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NEMOTRON_ENV_FILE", raising=False)
    return parse(tmp_path / "hello.py")


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    return make_spec(tmp_path, monkeypatch)


def test_mode_is_derived_and_inconsistent_requests_are_refused() -> None:
    assert RunConfig().mode == "local"
    assert RunConfig(profile="dev").mode == "run"
    assert RunConfig(profile="dev", detach=True).mode == "batch"
    with pytest.raises(CLIUsageError, match="detach=True.*needs a profile"):
        RunConfig(detach=True)
    with pytest.raises(CLIUsageError, match="list of words"):
        RunConfig(overrides="x=1")  # type: ignore[arg-type]


def test_from_args_splits_like_the_cli_and_round_trips() -> None:
    run = RunConfig.from_args("-c tiny --batch dev steps=3 --seed 1 -- x=2 --run")
    assert run == RunConfig(profile="dev", detach=True, config="tiny", overrides=("steps=3",),
                            passthrough=("--seed", "1", "x=2", "--run"))
    assert RunConfig.from_args(run.to_args()) == run


def test_compile_job_takes_a_run_config(spec) -> None:
    job = compile_job(spec, RunConfig(config="tiny", overrides=["greeting=yo"], passthrough=["--v"]))
    assert job.mode == "local" and not job.dry_run
    assert job.train_config.steps == 2 and job.train_config.greeting == "yo"
    assert job.passthrough == ("--v",)
    assert list(job.job_config.run.cli.argv) == ["-c", "tiny", "greeting=yo", "--", "--v"]


def test_compiled_job_gives_back_the_effective_run_config(spec) -> None:
    asked = RunConfig(profile="dev", config="tiny", overrides=("steps=5",), dry_run=True)
    job = compile_job(spec, asked)
    effective = job.run_config
    assert effective.mode == "batch"  # the profile says detach = true
    assert effective == RunConfig(profile="dev", detach=True, dry_run=True, config="tiny",
                                  overrides=("steps=5",), env_file=str(Path("env.toml").absolute()))
    again = compile_job(spec, effective)  # compiling it again gives the same job
    assert again.mode == job.mode and again.dry_run and again.train_config == job.train_config
    assert dict(again.run_env) == dict(job.run_env)




def test_a_recipe_config_converts_both_ways() -> None:
    from nemo_runspec.cmdline.context import split_global_args
    from nemo_runspec.cmdline.recipe_config import recipe_config_from

    gctx, rest = split_global_args(["-c", "tiny", "--run", "dev", "steps=4", "--", "--x"])
    run = RunConfig.from_recipe_config(recipe_config_from(gctx, rest))
    assert run == RunConfig(profile="dev", config="tiny", overrides=("steps=4",), passthrough=("--x",))
    back = run.recipe_config()
    assert (back.mode, back.profile, back.overrides, back.passthrough) == ("run", "dev", ["steps=4"], ["--x"])
    assert back.bare_words == []  # given in Python: no script argument is taken for a forgotten --run
    assert back.argv == ["-c", "tiny", "--run", "dev", "steps=4", "--", "--x"]


def test_as_recipe_config_converts_a_run_config_and_refuses_anything_else() -> None:
    from nemo_runspec.job.run_config import as_recipe_config

    cli = RunConfig(profile="dev", detach=True).recipe_config()
    assert as_recipe_config(cli) is cli
    assert as_recipe_config(RunConfig(profile="dev", detach=True)).mode == "batch"
    with pytest.raises(CLIUsageError, match="expected a RunConfig .* got dict"):
        as_recipe_config({"profile": "dev"})  # type: ignore[arg-type]
