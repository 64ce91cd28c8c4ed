"""Tests for build_job_config / extract_train_config / save_configs."""

from __future__ import annotations

import datetime
import os
import socket
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

import nemo_runspec
from nemo_runspec import parse as parse_runspec
from nemo_runspec.cli_context import GlobalContext
from nemo_runspec.config import (
    build_job_config,
    extract_train_config,
    git_info,
    parse_config,
    save_configs,
)
from nemo_runspec.env.profile import EnvProfile, Source
from nemo_runspec.secrets import REDACTED

HF = "hf_Abcdefghijklmnopqrstuvwxyz0123"
WANDB = "0123456789abcdef0123456789abcdef01234567"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def recipe(tmp_path: Path) -> Path:
    """A recipe script with a [tool.runspec] block and a config dir."""
    script = write(
        tmp_path / "recipe" / "train.py",
        """\
        # /// script
        # [tool.runspec]
        # name = "test/pretrain"
        # image = "nvcr.io/test/image:1"
        # [tool.runspec.resources]
        # nodes = 1
        # gpus_per_node = 4
        # ///
        print("train")
        """,
    )
    write(
        tmp_path / "recipe" / "config" / "base.yaml",
        """\
        run:
          data: pretrain-data:latest
          env:
            time: "01:00:00"
        train: {iters: 100}
        data:
          path: ${art:data,path}
        """,
    )
    write(
        tmp_path / "recipe" / "config" / "default.yaml",
        """\
        defaults: base
        run:
          env:
            nodes: 2
            env_vars: {A: from_yaml, B: from_yaml}
        """,
    )
    return script


def job(recipe: Path, overrides=(), profile=None, run="dev", **kw):
    spec = parse_runspec(recipe)
    ctx = GlobalContext(run=run if profile is not None else None, overrides=list(overrides),
                        argv=["pretrain", *overrides])
    train = parse_config(ctx, spec.config_dir, spec.config.default)
    return build_job_config(train, ctx, spec.name, recipe, env_profile=profile, runspec=spec, **kw)


def dev_profile(**values) -> EnvProfile:
    return EnvProfile("dev", Path("env.toml"), ["dev"], values,
                      {k: Source("dev", "env.toml", i + 3) for i, k in enumerate(values)})


def test_precedence_each_level_wins_over_lower(recipe: Path, tmp_path: Path) -> None:
    cfg_file = recipe.parent / "config" / "default.yaml"
    default_yaml = cfg_file.read_text()

    # 1. runspec only: drop nodes from the YAML.
    cfg_file.write_text(default_yaml.replace("    nodes: 2\n", ""))
    j = job(recipe)
    assert j.run.env.nodes == 1
    assert j.run.env_sources.nodes == f"runspec {recipe.resolve()}"  # tmp_path is not below cwd

    # 2. YAML over runspec.
    cfg_file.write_text(default_yaml)
    j = job(recipe)
    assert j.run.env.nodes == 2
    assert j.run.env_sources.nodes.startswith("config ")
    assert j.run.env_sources.nodes.endswith("default.yaml")

    # 3. env.toml profile over YAML.
    j = job(recipe, profile=dev_profile(nodes=3))
    assert j.run.env.nodes == 3
    assert j.run.env_sources.nodes == "env.toml:3 [dev]"

    # 4. command line over profile.
    j = job(recipe, overrides=["run.env.nodes=4"], profile=dev_profile(nodes=3))
    assert j.run.env.nodes == 4
    assert j.run.env_sources.nodes == "command line"


def test_runspec_resources_and_image_are_lowest_defaults(recipe: Path) -> None:
    j = job(recipe)
    assert j.run.env.gpus_per_node == 4
    assert j.run.env.container_image == "nvcr.io/test/image:1"
    assert j.run.env_sources.gpus_per_node.startswith("runspec ")
    j = job(recipe, profile=dev_profile(container_image="my/image:2"))
    assert j.run.env.container_image == "my/image:2"


def test_yaml_source_names_the_file_of_the_defaults_chain(recipe: Path) -> None:
    j = job(recipe)
    assert j.run.env.time == "01:00:00"
    assert j.run.env_sources.time.endswith("base.yaml")
    assert j.run.env_sources.nodes.endswith("default.yaml")


def test_env_vars_merge_key_by_key(recipe: Path) -> None:
    j = job(
        recipe,
        overrides=["run.env.env_vars.B=from_cli"],
        profile=dev_profile(env_vars={"A": "from_profile", "C": "from_profile"}),
    )
    assert dict(j.run.env.env_vars) == {"A": "from_profile", "B": "from_cli", "C": "from_profile"}
    src = j.run.env_sources
    assert src["env_vars.A"] == "env.toml:3 [dev]"
    assert src["env_vars.B"] == "command line"
    assert src["env_vars.C"] == "env.toml:3 [dev]"


def test_cli_delete_removes_setting_from_every_level(recipe: Path) -> None:
    j = job(recipe, overrides=["~run.env.partition"], profile=dev_profile(partition="dev"))
    assert "partition" not in j.run.env
    assert "partition" not in j.run.env_sources


def test_cli_override_of_key_only_in_profile(recipe: Path) -> None:
    j = job(recipe, overrides=["run.env.partition=batch"], profile=dev_profile(partition="dev"))
    assert j.run.env.partition == "batch"
    assert j.run.env_sources.partition == "command line"


def test_run_section_fields(recipe: Path) -> None:
    j = job(recipe, overrides=["train.iters=5"], profile=dev_profile(nodes=3))
    assert j.train.iters == 5
    assert j.run.mode == "run"
    assert j.run.profile == "dev"
    assert j.run.dry_run is False
    assert j.run.recipe.name == "test/pretrain"
    assert j.run.recipe.script == str(recipe.resolve())
    assert j.run.data == "pretrain-data:latest"  # recipe's own run keys are kept
    assert list(j.run.cli.argv) == ["pretrain", "train.iters=5"]
    assert j.run.cli.config == "default"
    assert list(j.run.cli.overrides) == ["train.iters=5"]
    assert list(j.run.cli.passthrough) == []
    raw = OmegaConf.to_container(j, resolve=False)
    assert raw["data"]["path"] == "${art:data,path}"


def test_local_mode_and_explicit_argv(recipe: Path) -> None:
    spec = parse_runspec(recipe)
    ctx = GlobalContext(config="base", dry_run=True, passthrough=["--foo"])
    train = parse_config(ctx, spec.config_dir, spec.config.default)
    j = build_job_config(train, ctx, spec.name, recipe, ["x", "y"])
    assert (j.run.mode, j.run.profile, j.run.dry_run) == ("local", None, True)
    assert list(j.run.cli.argv) == ["x", "y"]
    assert j.run.cli.config == "base"
    assert list(j.run.cli.passthrough) == ["--foo"]


def test_train_config_not_from_parse_config(tmp_path: Path) -> None:
    ctx = GlobalContext(config="mine")
    train = OmegaConf.create({"run": {"env": {"nodes": 2}}, "x": 1})
    j = build_job_config(train, ctx, "r", tmp_path / "s.py")
    assert j.run.env.nodes == 2
    assert j.run.env_sources.nodes == "config mine"
    assert "env" in train.run and "provenance" not in train.run  # input untouched


def test_provenance_in_real_git_repo(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
            env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x",
                 "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"},
        ).stdout.strip()

    git("init", "-q", "-b", "feature-x")
    script = write(repo / "recipes" / "train.py", "print(1)\n")
    git("add", ".")
    git("commit", "-q", "-m", "init")
    head = git("rev-parse", "HEAD")

    ctx = GlobalContext()
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    j = build_job_config(OmegaConf.create({"a": 1}), ctx, "r", script)
    prov = j.run.provenance
    assert prov.git.commit == head
    assert prov.git.branch == "feature-x"
    assert prov.git.dirty is False
    assert prov.version == nemo_runspec.__version__
    assert prov.host == socket.gethostname()
    assert prov.user
    t = datetime.datetime.fromisoformat(prov.time)
    assert t.utcoffset() == datetime.timedelta(0)
    assert before <= t <= datetime.datetime.now(datetime.UTC)

    (repo / "untracked.txt").write_text("x")
    assert git_info(script)["dirty"] is False
    script.write_text("print(2)\n")
    assert git_info(script)["dirty"] is True
    git("checkout", "-q", "--detach")
    assert git_info(script)["branch"] is None


def test_provenance_without_repo_or_git(tmp_path: Path, monkeypatch) -> None:
    script = write(tmp_path / "norepo" / "s.py", "x\n")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert git_info(script) is None
    empty_bin = tmp_path / "emptybin"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))  # no git executable at all
    j = build_job_config(OmegaConf.create({}), GlobalContext(), "r", script)
    assert j.run.provenance.git is None
    assert j.run.provenance.version == nemo_runspec.__version__


def test_repo_without_commits(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True)
    info = git_info(tmp_path / "r")
    assert info is not None and info["commit"] is None


def test_secrets_kept_in_memory(recipe: Path) -> None:
    j = job(recipe, profile=dev_profile(env_vars={"HF_TOKEN": HF}))
    assert j.run.env.env_vars.HF_TOKEN == HF


def test_extract_train_config_drops_launcher_keys(recipe: Path) -> None:
    j = job(recipe, overrides=["train.iters=7"], profile=dev_profile(nodes=3, env_vars={"HF_TOKEN": HF}))
    t = extract_train_config(j)
    for key in ("env_sources", "provenance", "cli", "dry_run"):
        assert key not in t.run
    assert t.run.data == "pretrain-data:latest"
    assert t.run.env.nodes == 3
    assert t.run.env.env_vars.HF_TOKEN == HF  # local: same machine, nothing shipped
    assert t.train.iters == 7
    assert OmegaConf.to_container(t, resolve=False)["data"]["path"] == "${art:data,path}"

    remote = extract_train_config(j, for_remote=True)
    assert "HF_TOKEN" not in remote.run.env.env_vars
    assert remote.run.env.env_vars.A == "from_yaml"


def test_extract_for_remote_keeps_references(tmp_path: Path) -> None:
    j = OmegaConf.create({"wandb": {"api_key": "${oc.env:WANDB_API_KEY}", "token": "literal-secret"},
                          "run": {"cli": {"argv": []}}})
    t = extract_train_config(j, for_remote=True)
    assert OmegaConf.to_container(t, resolve=False) == {"wandb": {"api_key": "${oc.env:WANDB_API_KEY}"}}


def test_save_configs_redacts_secrets(recipe: Path, tmp_path: Path) -> None:
    profile = dev_profile(env_vars={"HF_TOKEN": HF, "WANDB_API_KEY": WANDB, "HF_HOME": "/cache"})
    j = job(recipe, overrides=["+run.env.env_vars.EXTRA_PASSWORD=hunter2hunter2",
                               "+logger.note=token is hunter2hunter2"], profile=profile)
    train = extract_train_config(j)  # local train config still holds the secrets
    out = tmp_path / "jobdir"
    job_path, train_path = save_configs(j, train, out)
    assert (job_path, train_path) == (out / "job.yaml", out / "train.yaml")
    for path in (job_path, train_path):
        text = path.read_text()
        for secret in (HF, WANDB, "hunter2hunter2"):
            assert secret not in text, f"{secret} leaked into {path.name}"
        assert REDACTED in text
        assert "${art:data,path}" in text  # not resolved
        loaded = yaml.safe_load(text)
        assert loaded["run"]["env"]["env_vars"]["HF_HOME"] == "/cache"
    saved = yaml.safe_load(job_path.read_text())
    assert saved["run"]["env_sources"]["env_vars.HF_TOKEN"] == "env.toml:3 [dev]"
    assert saved["run"]["env"]["env_vars"]["HF_TOKEN"] == REDACTED
    assert sorted(p.name for p in out.iterdir()) == ["job.yaml", "train.yaml"]  # no temp files
    assert j.run.env.env_vars.HF_TOKEN == HF  # in-memory config unchanged


def test_save_configs_keeps_env_references(tmp_path: Path) -> None:
    j = OmegaConf.create({"wandb": {"api_key": "${oc.env:WANDB_API_KEY}"}, "x": "${wandb.api_key}"})
    job_path, train_path = save_configs(j, j, tmp_path)
    assert yaml.safe_load(train_path.read_text()) == {
        "wandb": {"api_key": "${oc.env:WANDB_API_KEY}"}, "x": "${wandb.api_key}"}


def test_save_configs_overwrites_atomically(tmp_path: Path) -> None:
    save_configs(OmegaConf.create({"v": 1}), OmegaConf.create({"v": 1}), tmp_path)
    job_path, _ = save_configs(OmegaConf.create({"v": 2}), OmegaConf.create({"v": 2}), tmp_path)
    assert yaml.safe_load(job_path.read_text()) == {"v": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.yaml", "train.yaml"]


def test_with_real_env_profile(recipe: Path, tmp_path: Path) -> None:
    import nemo_runspec.env as env
    env_file = write(
        tmp_path / "env.toml",
        """\
        [base]
        executor = "slurm"
        account = "acct"
        nodes = 2

        [dev]
        extends = "base"
        partition = "dev"
        nodes = 3
        env_vars = { HF_TOKEN = "HF_VALUE" }
        """.replace("HF_VALUE", HF),
    )
    profile = env.load_env_profile("dev", env_file)
    j = job(recipe, overrides=["run.env.partition=batch"], profile=profile)
    assert j.run.env.nodes == 3
    assert j.run.env.account == "acct"
    assert j.run.env.partition == "batch"
    assert j.run.env_sources.nodes == str(profile.sources["nodes"])
    assert "[dev]" in j.run.env_sources.nodes
    assert "[base]" in j.run.env_sources.account
    assert j.run.env_sources.partition == "command line"
    job_path, _ = save_configs(j, extract_train_config(j, for_remote=True), tmp_path / "out")
    assert HF not in job_path.read_text()


def test_labels_are_relative_to_cwd_when_below_it(recipe: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    j = job(recipe)
    assert j.run.env_sources.gpus_per_node == "runspec recipe/train.py"
    assert j.run.env_sources.nodes == "config recipe/config/default.yaml"
    assert j.run.env_sources.time == "config recipe/config/base.yaml"


def test_run_env_command_line_values_are_validated_like_a_profile(tmp_path):
    """run.env.KEY=... must not escape env.toml's type/range/format checks."""
    from nemo_runspec.cli_context import GlobalContext
    from nemo_runspec.config import build_job_config, parse_config
    from nemo_runspec.errors import EnvFileError

    cfg_dir = tmp_path / "config"
    cfg_dir.mkdir()
    (cfg_dir / "default.yaml").write_text("run:\n  env: {}\ntrain:\n  iters: 1\n")
    for override, needle in [
        ("run.env.nodes=0", "greater than or equal to 1"),
        ("run.env.nodes=1.5", "must be integer"),
        ("run.env.time=5h", "is not a Slurm time limit"),
        ("run.env.exclusive=maybe", "must be boolean"),
        ("+run.env.nodez=3", "unknown key 'nodez'"),
    ]:
        ctx = GlobalContext(overrides=[override])
        cfg = parse_config(ctx, cfg_dir, "default")
        with pytest.raises(EnvFileError, match=needle) as info:
            build_job_config(cfg, ctx, "r/x", tmp_path / "x.py")
        assert str(info.value).startswith("command line:")
    ctx = GlobalContext(overrides=["run.env.time=10:00:00"])  # not base-60 36000
    job = build_job_config(parse_config(ctx, cfg_dir, "default"), ctx, "r/x", tmp_path / "x.py")
    assert job.run.env.time == "10:00:00"
