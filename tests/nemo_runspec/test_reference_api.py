"""The reference system's documented calls work here as written (issue 11).

Each test makes the call the way the reference's CLI-architecture page and the
nemo_runspec package README show it, and checks the result they describe.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from omegaconf import OmegaConf

ENV_TOML = """\
[base]
executor = "slurm"
account = "my-account"
remote_job_dir = "/lustre/jobs"

[dev]
extends = "base"
partition = "dev-gpu"
nodes = 1

[prod]
extends = "base"
partition = "prod-gpu"
nodes = 8

[wandb]
entity = "my-team"
project = "nemotron"
"""


@pytest.fixture
def env_toml(tmp_path, monkeypatch):
    path = tmp_path / "env.toml"
    path.write_text(ENV_TOML)
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NEMOTRON_ENV_FILE", raising=False)
    return path


# ------------------------------------------------------------------ execution


def test_create_executor_with_env_env_vars_and_packager_only(env_toml):
    import nemo_run as run

    from nemo_runspec.env import load_env_profile
    from nemo_runspec.execution import create_executor

    env = load_env_profile("prod", env_toml)
    executor = create_executor(env=env, env_vars={"NCCL_DEBUG": "INFO"}, packager=run.Packager())

    assert isinstance(executor, run.SlurmExecutor)
    assert (executor.account, executor.partition, executor.nodes) == ("my-account", "prod-gpu", 8)
    assert executor.env_vars["NCCL_DEBUG"] == "INFO"


def test_create_executor_local_profile_needs_no_runspec():
    import nemo_run as run

    from nemo_runspec.execution import create_executor

    executor = create_executor(env={"executor": "local"}, env_vars={}, packager=run.Packager())
    assert isinstance(executor, run.LocalExecutor)


def test_build_env_vars_returns_one_dict_with_the_tokens():
    from nemo_runspec.execution import build_env_vars

    job_config = OmegaConf.create({"run": {"wandb": {"project": "p", "entity": "e"}},
                                   "model": "hf://org/model"})
    env_config = {"executor": "slurm", "env_vars": {"NCCL_DEBUG": "INFO"}}
    environ = {"WANDB_API_KEY": "wk-1", "HF_TOKEN": "hf_1"}

    env_vars = build_env_vars(job_config, env_config, environ=environ)

    assert isinstance(env_vars, dict)
    assert env_vars["NCCL_DEBUG"] == "INFO"
    assert (env_vars["WANDB_PROJECT"], env_vars["WANDB_ENTITY"]) == ("p", "e")
    assert (env_vars["WANDB_API_KEY"], env_vars["HF_TOKEN"]) == ("wk-1", "hf_1")


def test_the_plain_secret_split_stays_available():
    from nemo_runspec.execution import build_env_vars, split_env_vars

    job_config = {"run": {"wandb": {"project": "p"}}}
    environ = {"WANDB_API_KEY": "wk-1"}
    plain, secrets = split_env_vars(job_config, {}, environ=environ)
    assert secrets == {"WANDB_API_KEY": "wk-1"} and "WANDB_API_KEY" not in plain
    assert build_env_vars(job_config, {}, environ=environ, split=True) == (plain, secrets)
    assert build_env_vars(job_config, {}, environ=environ) == {**plain, **secrets}


# ------------------------------------------------------------------ env.toml


def test_load_env_file_without_argument_uses_nemotron_env_file(env_toml, monkeypatch):
    from nemo_runspec.env import load_env_file

    monkeypatch.setenv("NEMOTRON_ENV_FILE", str(env_toml))
    env = load_env_file()
    assert Path(env.path) == env_toml
    assert "dev" in env and env["prod"]["nodes"] == 8
    assert env["wandb"]["entity"] == "my-team"
    assert set(env.keys()) >= {"base", "dev", "prod", "wandb"}


def test_load_env_file_without_argument_discovers_env_toml(env_toml, monkeypatch):
    from nemo_runspec.env import load_env_file

    (env_toml.parent / "pyproject.toml").write_text("")
    sub = env_toml.parent / "src" / "pkg"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert Path(load_env_file().path) == env_toml


def test_load_env_file_without_argument_and_no_file_says_where_it_looked(tmp_path, monkeypatch):
    from nemo_runspec.env import load_env_file
    from nemo_runspec.errors import EnvFileError

    (tmp_path / "pyproject.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NEMOTRON_ENV_FILE", raising=False)
    with pytest.raises(EnvFileError, match="no env.toml was found"):
        load_env_file()


def test_load_env_profile_reads_like_a_mapping(env_toml):
    from nemo_runspec.env import load_env_profile

    env = load_env_profile("dev", env_toml)
    assert env["executor"] == "slurm" and env["partition"] == "dev-gpu"  # extends base
    assert env.get("nodes", 1) == 1 and env.get("gpus_per_node", 8) == 8
    assert "account" in env and "qos" not in env
    assert dict(env)["remote_job_dir"] == "/lustre/jobs"
    assert dict(env.items()) == dict(env)
    with pytest.raises(KeyError):
        env["no_such_key"]


def test_parse_env_result_reads_like_a_mapping(env_toml, monkeypatch):
    from nemo_runspec.cli.context import GlobalContext
    from nemo_runspec.env import parse_env

    monkeypatch.setenv("NEMOTRON_ENV_FILE", str(env_toml))
    env = parse_env(GlobalContext(run="prod"))
    assert env["nodes"] == 8 and env.get("partition") == "prod-gpu"
    assert parse_env(GlobalContext()) is None  # local mode: no profile


# ------------------------------------------------------------------ CLI


def test_split_unknown_args_takes_late_globals():
    from nemo_runspec.cli_context import GlobalContext, split_unknown_args

    ctx = GlobalContext(config="tiny")
    overrides, passthrough = split_unknown_args(
        ["train.train_iters=5000", "--run", "dev", "-d", "--seed", "3", "--", "--run", "x"], ctx)

    assert overrides == ["train.train_iters=5000"]
    assert passthrough == ["--seed", "3", "--run", "x"]
    assert (ctx.run, ctx.dry_run, ctx.mode, ctx.profile, ctx.config) == ("dev", True, "run", "dev", "tiny")


def test_split_unknown_args_late_globals_conflicts_are_errors():
    from nemo_runspec.cli_context import GlobalContext, split_unknown_args
    from nemo_runspec.errors import CLIUsageError

    with pytest.raises(CLIUsageError, match="cannot be used together"):
        split_unknown_args(["--batch", "prod"], GlobalContext(run="dev"))
    with pytest.raises(CLIUsageError, match="given twice"):
        split_unknown_args(["--run", "prod"], GlobalContext(run="dev"))


# ------------------------------------------------------------------ config


def test_build_job_config_and_save_configs_from_config_loader(tmp_path, env_toml):
    from nemo_runspec.cli.context import GlobalContext
    from nemo_runspec.config import extract_train_config
    from nemo_runspec.config.loader import build_job_config, save_configs
    from nemo_runspec.env import load_env_profile

    ctx = GlobalContext(run="dev", argv=["nano3", "pretrain", "--run", "dev"])
    train_config = OmegaConf.create({"train": {"train_iters": 10}})
    env = load_env_profile("dev", env_toml)

    job_config = build_job_config(train_config, ctx, "nano3/pretrain", "train.py",
                                  ctx.argv, env_profile=env)
    train_config_for_script = extract_train_config(job_config, for_remote=True)
    job_path, train_path = save_configs(job_config, train_config_for_script, tmp_path / "job")

    assert job_config.run.env.partition == "dev-gpu"
    assert job_config.run.env_sources.partition.endswith("env.toml:8 [dev]")  # the line that set it
    assert job_path.name == "job.yaml" and train_path.name == "train.yaml"
    assert OmegaConf.load(train_path).train.train_iters == 10


@pytest.mark.parametrize("kind", ["dict", "DictConfig"])
def test_build_job_config_takes_the_profile_as_a_plain_mapping(kind):
    # the reference's callers pass the profile as parse_env returns it there: a DictConfig
    from nemo_runspec.cli.context import GlobalContext
    from nemo_runspec.config import build_job_config

    profile = {"executor": "slurm", "account": "acct", "partition": "gpu", "nodes": 2,
               "container": "nvcr.io/nvidia/nemo:25.11", "env_vars": ["A=1"]}
    env = OmegaConf.create(profile) if kind == "DictConfig" else profile
    ctx = GlobalContext(run="dev", argv=["nano3", "pretrain", "--run", "dev"])
    job_config = build_job_config(OmegaConf.create({"train": {"train_iters": 10}}), ctx, "nano3/pretrain",
                                  "train.py", ctx.argv, env_profile=env)
    run_env = OmegaConf.to_container(job_config.run.env)
    assert run_env["partition"] == "gpu" and run_env["nodes"] == 2
    assert run_env["container_image"] == "nvcr.io/nvidia/nemo:25.11"  # the reference's forms read as ours
    assert run_env["env_vars"] == {"A": "1"}
    assert job_config.run.env_sources.nodes == "env profile [dev]" and job_config.run.profile == "dev"


def test_build_job_config_refuses_a_profile_that_is_no_mapping():
    from nemo_runspec.cli.context import GlobalContext
    from nemo_runspec.config import build_job_config
    from nemo_runspec.errors import EnvFileError

    with pytest.raises(EnvFileError, match="env_profile must be a mapping of profile keys, not a list"):
        build_job_config(OmegaConf.create({}), GlobalContext(), "r", "train.py", [], env_profile=["nodes=2"])


# ------------------------------------------------------------------ templates


def test_ray_cpu_template_name_resolves_to_our_ray_template():
    from nemo_runspec.execution.ray import RAY_TEMPLATE
    from nemo_runspec.templates import template_path

    path = template_path("ray_cpu.sub.j2")
    assert path == RAY_TEMPLATE and path.is_file()
    assert not (path.parent / "ray_cpu.sub.j2").exists()  # one template, not a copy
    with pytest.raises(FileNotFoundError, match="ray_cpu.sub.j2"):
        template_path("nope.sub.j2")


def test_late_globals_in_a_typer_app_of_your_own():
    """The reference's RecipeTyper + parse_recipe_config: ``pretrain x=1 --run dev -d`` in a
    user's own app (no nemotron main to pre-parse the globals) gives the profile and dry run."""
    from typer.testing import CliRunner

    from nemo_runspec.recipe_config import parse_recipe_config
    from nemo_runspec.recipe_typer import RECIPE_CONTEXT_SETTINGS, RecipeTyper

    app = RecipeTyper(name="mine")
    seen = {}

    @app.callback()
    def main() -> None:
        """My recipes."""

    @app.command(context_settings=dict(RECIPE_CONTEXT_SETTINGS))
    def pretrain(ctx: typer.Context) -> None:
        cfg = parse_recipe_config(ctx)
        seen.update(mode=cfg.mode, attached=cfg.attached, profile=cfg.profile, dry_run=cfg.dry_run,
                    overrides=cfg.overrides, passthrough=cfg.passthrough, config=cfg.config,
                    bare=cfg.bare_words)

    result = CliRunner().invoke(app, ["pretrain", "x=1", "--run", "dev", "-d", "-c", "tiny", "--seed", "3"])
    assert result.exit_code == 0, result.output
    assert seen == {"mode": "run", "attached": True, "profile": "dev", "dry_run": True,
                    "overrides": ["x=1"], "passthrough": ["--seed", "3"], "config": "tiny", "bare": ["3"]}


def test_a_global_option_where_none_is_read_never_suggests_itself():
    from nemo_runspec.cli_context import split_unknown_args
    from nemo_runspec.errors import CLIUsageError

    with pytest.raises(CLIUsageError) as err:
        split_unknown_args(["x=1", "--run", "dev"])
    text = f"{err.value} {err.value.hint}"
    assert "did you mean '--run'" not in text and "split_unknown_args(args, ctx)" in text
    with pytest.raises(CLIUsageError, match="did you mean '--dry-run'"):
        split_unknown_args(["--dryrun"])


def test_a_profile_is_a_real_mapping(env_toml):
    import copy
    from collections.abc import Mapping

    from nemo_runspec.env import load_env_profile

    env = load_env_profile("prod", env_toml)
    assert isinstance(env, Mapping) and len(env) == len(env.values) == 6  # extends is a key too
    assert dict(env) == env.values and set(env) == set(env.values)
    assert env.nodes == 8 and env.partition == "prod-gpu" and env.qos is None  # a profile key, unset
    with pytest.raises(AttributeError):
        env.no_such_key  # noqa: B018
    assert OmegaConf.create(dict(env)).nodes == 8
    with pytest.raises(Exception) as err:  # noqa: B017, PT011 - never a config of our attributes
        OmegaConf.create(env)
    assert "unsupported type" in str(err.value).lower()
    assert copy.deepcopy(env) == env and bool(load_env_profile("dev", env_toml))
