"""Recipe configs and command lines written for the reference system: ``run.nodes=8``,
``run.env.container``, ``env_vars`` lists, ``${run.wandb.*}``, ``dry_run``/``detach``."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from nemo_runspec import parse as parse_runspec
from nemo_runspec.cli_context import GlobalContext
from nemo_runspec.config import (
    apply_overrides,
    build_job_config,
    extract_train_config,
    parse_config,
)
from nemo_runspec.config.job_config import CLI_LABEL
from nemo_runspec.env import load_env_profile
from nemo_runspec.errors import ConfigError, EnvFileError
from nemo_runspec.execution import split_env_vars

TOKEN = "hf_cfgTOKENvalue0123456789abcdefgh"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


@pytest.fixture
def recipe(tmp_path: Path) -> Path:
    """A recipe whose default config is in the reference's layout."""
    script = write(tmp_path / "recipe" / "train.py", """
        # /// script
        # [tool.runspec]
        # name = "ref/pretrain"
        # image = "nvcr.io/runspec/image:1"
        # [tool.runspec.resources]
        # nodes = 1
        # gpus_per_node = 8
        # ///
        """)
    write(tmp_path / "recipe" / "config" / "default.yaml", """
        run:
          data: some-data:latest
          env:
            container: nvcr.io/from/yaml:2
        recipe:
          _target_: pkg.module.recipe_config
          per_split_data_args_path: ${art:data,path}/blend.json
        logger:
          wandb_project: ${run.wandb.project}
          wandb_entity: ${run.wandb.entity}
        """)
    write(tmp_path / "recipe" / "config" / "plain.yaml", """
        run:
          data: some-data:latest
        train: {iters: 1}
        """)
    return script


@pytest.fixture
def env_toml(tmp_path: Path) -> Path:
    return write(tmp_path / "env.toml", f"""
        [wandb]
        project = "proj"
        entity = "team"

        [cluster]
        executor = "slurm"
        partition = "gpu"
        nodes = 2
        env_vars = ["NCCL_DEBUG=WARN", "HF_TOKEN={TOKEN}"]

        [image]
        extends = "cluster"
        container = "nvcr.io/from/profile:3"

        [safe]
        extends = "cluster"
        dry_run = true

        [away]
        extends = "cluster"
        detach = true
        """)


def compile_(recipe: Path, overrides=(), *, profile=None, env_toml=None, mode="run", dry_run=False,
             config=None, wandb=None):
    spec = parse_runspec(recipe)
    kw = {mode: profile} if profile else {}
    ctx = GlobalContext(overrides=list(overrides), dry_run=dry_run, config=config, **kw)
    train = parse_config(ctx, spec.config_dir, spec.config.default)
    prof = load_env_profile(profile, env_toml) if profile else None
    return build_job_config(train, ctx, spec.name, recipe, env_profile=prof, runspec=spec,
                            wandb_section=wandb)


# --------------------------------------------------------------------------- run.KEY=v


def test_run_nodes_is_run_env_nodes_and_beats_the_profile(recipe, env_toml):
    job = compile_(recipe, ["run.nodes=8", "run.partition=big"], profile="cluster", env_toml=env_toml)
    assert job.run.env.nodes == 8 and job.run.env.partition == "big"
    assert job.run.env_sources.nodes == CLI_LABEL
    assert "nodes" not in job.run and "partition" not in job.run


def test_run_data_stays_run_data(recipe):
    job = compile_(recipe, ["run.data=other-data:v2"])
    assert job.run.data == "other-data:v2" and "data" not in job.run.env


def test_a_key_the_configs_run_has_is_not_redirected(recipe):
    cfg = OmegaConf.create({"run": {"nodes": 1, "env": {}}})
    out = apply_overrides(cfg, ["run.nodes=3"])
    assert out.run.nodes == 3 and "nodes" not in out.run.env


def test_run_container_is_container_image(recipe):
    job = compile_(recipe, ["run.container=nvcr.io/cli/image:9"])
    assert job.run.env.container_image == "nvcr.io/cli/image:9" and "container" not in job.run.env
    job = compile_(recipe, ["run.env.container=nvcr.io/cli/image:8"])
    assert job.run.env.container_image == "nvcr.io/cli/image:8"


def test_plus_run_key_adds_a_run_key():
    out = apply_overrides(OmegaConf.create({"run": {}}), ["+run.nodes=3"])
    assert out.run.nodes == 3 and "env" not in out.run


def test_delete_shorthand(recipe, env_toml):
    job = compile_(recipe, ["~run.nodes"], profile="cluster", env_toml=env_toml)
    assert "nodes" not in job.run.env and "nodes" not in job.run.env_sources  # as ~run.env.nodes


def test_run_typo_suggests_the_profile_key():
    with pytest.raises(ConfigError) as e:
        apply_overrides(OmegaConf.create({"run": {"data": "x"}}), ["run.nodez=8"])
    assert "did you mean 'run.nodes'?" in str(e.value) and "\n" not in str(e.value)


def test_run_env_values_are_validated_after_the_shorthand(recipe):
    with pytest.raises(EnvFileError) as e:
        compile_(recipe, ["run.nodes=zero"])
    assert "'nodes'" in str(e.value) and "integer" in str(e.value)


# --------------------------------------------------------------------------- run.env in the config


def test_yaml_container_is_container_image_below_the_profile(recipe, env_toml):
    local = compile_(recipe)
    assert local.run.env.container_image == "nvcr.io/from/yaml:2"
    assert local.run.env_sources.container_image.startswith("config ")
    job = compile_(recipe, profile="image", env_toml=env_toml)
    assert job.run.env.container_image == "nvcr.io/from/profile:3"
    assert job.run.env_sources.container_image.endswith("env.toml:13 [image]")


def test_env_vars_lists_in_yaml_and_on_the_command_line(recipe, tmp_path):
    write(tmp_path / "recipe" / "config" / "vars.yaml", """
        defaults: [plain]
        run:
          env:
            env_vars: ["A=1", "B=2"]
        """)
    job = compile_(recipe, ["run.env.env_vars=[B=3,C=4]"], config="vars")
    assert job.run.env.env_vars == {"B": "3", "C": "4"}  # a whole value on the command line replaces
    job = compile_(recipe, ["run.env.env_vars.C=five"], config="vars")
    assert job.run.env.env_vars == {"A": "1", "B": "2", "C": "five"}


def test_bad_env_vars_entry_on_the_command_line_is_one_line(recipe):
    with pytest.raises(EnvFileError) as e:
        compile_(recipe, ["run.env.env_vars=[A=1,NOEQUALS]"])
    msg = str(e.value)
    assert "entry 1 of 'env_vars'" in msg and "run.env.env_vars=[A=1,NOEQUALS]" in msg and "\n" not in msg


def test_env_vars_list_secret_goes_to_the_secrets_side(recipe, env_toml):
    job = compile_(recipe, profile="cluster", env_toml=env_toml)
    plain, secrets = split_env_vars(job, job.run.env, runspec=parse_runspec(recipe), environ={},
                                    wandb_section={}, registry=_NoRegistry())
    assert secrets == {"HF_TOKEN": TOKEN} and plain["NCCL_DEBUG"] == "WARN"
    assert TOKEN not in repr(plain)


class _NoRegistry:
    backend = None


# --------------------------------------------------------------------------- ${run.wandb.*}


def test_run_wandb_is_filled_from_the_section_and_resolves(recipe):
    job = compile_(recipe, wandb={"project": "proj", "entity": "team", "api_key_env": "WANDB_API_KEY"})
    assert job.run.wandb.project == "proj" and job.run.wandb.entity == "team"
    train = extract_train_config(job, for_remote=True)
    # the script reads train.yaml: the interpolation is kept and resolves there
    assert OmegaConf.to_container(train, resolve=False)["logger"]["wandb_project"] == "${run.wandb.project}"
    assert OmegaConf.select(train, "logger.wandb_project") == "proj"
    assert OmegaConf.select(train, "logger.wandb_entity") == "team"


def test_run_wandb_without_a_section_resolves_to_null(recipe):
    job = compile_(recipe)
    train = extract_train_config(job)
    assert OmegaConf.select(train, "logger.wandb_project") is None


def test_run_wandb_override_on_the_command_line(recipe):
    job = compile_(recipe, ["run.wandb.project=other"], wandb={"project": "proj", "entity": "team"})
    assert job.run.wandb.project == "other" and job.run.wandb.entity == "team"


def test_no_run_wandb_when_the_config_does_not_use_it(recipe):
    job = compile_(recipe, config="plain", wandb={"project": "proj"})
    assert "wandb" not in job.run  # [wandb] alone never turns W&B on


# --------------------------------------------------------------------------- dry_run / detach


def test_profile_dry_run_makes_a_dry_run(recipe, env_toml, capsys):
    job = compile_(recipe, profile="safe", env_toml=env_toml)
    assert job.run.dry_run is True and job.run.mode == "run"
    assert "dry_run = true" in capsys.readouterr().err


def test_profile_detach_turns_run_into_batch(recipe, env_toml):
    assert compile_(recipe, profile="away", env_toml=env_toml).run.mode == "batch"
    assert compile_(recipe, profile="away", env_toml=env_toml, mode="batch").run.mode == "batch"
    assert compile_(recipe, profile="cluster", env_toml=env_toml).run.mode == "run"


def test_false_changes_nothing_and_the_command_line_still_wins(recipe, env_toml):
    job = compile_(recipe, ["run.dry_run=false"], profile="cluster", env_toml=env_toml, dry_run=True)
    assert job.run.dry_run is True
    job = compile_(recipe, ["run.detach=false"], profile="cluster", env_toml=env_toml, mode="batch")
    assert job.run.mode == "batch"


def test_dry_run_and_detach_on_the_command_line(recipe, env_toml):
    job = compile_(recipe, ["run.detach=true", "run.dry_run=true"], profile="cluster", env_toml=env_toml)
    assert job.run.mode == "batch" and job.run.dry_run is True
    assert "dry_run" not in extract_train_config(job).run  # bookkeeping, not for the script


def test_bare_hybrid_from_the_command_line_warns_and_is_dropped(recipe, capsys):
    job = compile_(recipe, ["run.env.packager=hybrid"])
    assert "packager" not in job.run.env
    assert 'packager = "hybrid" names no sub-packagers' in capsys.readouterr().err


def test_bad_yaml_container_names_container(recipe, tmp_path):
    write(tmp_path / "recipe" / "config" / "bad.yaml", """
        run:
          env:
            container: "image with spaces"
        """)
    with pytest.raises(EnvFileError) as e:
        compile_(recipe, config="bad")
    msg = str(e.value)
    assert "'container'" in msg and "container_image" not in msg and "bad.yaml" in msg
