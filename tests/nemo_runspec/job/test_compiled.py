"""The compiled job (nemo_runspec.job.compiled): built once from the command line, read by every later step."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from nemo_runspec import parse
from nemo_runspec.cli_context import split_global_args
from nemo_runspec.errors import NemoRunspecError
from nemo_runspec.job.compiled import CompiledJob, compile_job
from nemo_runspec.recipe_config import recipe_config_from

SCRIPT = """\
# /// script
# [tool.runspec]
# schema = "1"
# name = "test/train"
#
# [tool.runspec.run]
# launch = "torchrun"
#
# [tool.runspec.config]
# dir = "./config"
# default = "small"
#
# [tool.runspec.resources]
# nodes = 1
# gpus_per_node = 4
# ///
print("hello")
"""

CONFIG = """\
model:
  layers: 2
  use_auth_token: true
train:
  iters: 10
"""

ENV_TOML = """\
[dev]
executor = "slurm"
account = "acct"
partition = "debug"
nodes = 2
gpus_per_node = 0
container_image = ""

[dev.env_vars]
HF_TOKEN = "hf_compiledJOBsecret0123456789"

[artifacts]
backend = "file"
root = "{artifacts}"

[cli]
default_profile = "dev"
"""


@pytest.fixture
def recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    script = tmp_path / "recipe" / "train.py"
    (script.parent / "config").mkdir(parents=True)
    script.write_text(SCRIPT)
    (script.parent / "config" / "small.yaml").write_text(CONFIG)
    env_toml = tmp_path / "env.toml"
    env_toml.write_text(ENV_TOML.format(artifacts=tmp_path / "registry"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NEMOTRON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NEMOTRON_ENV_FILE", raising=False)
    monkeypatch.delenv("NEMOTRON_ARTIFACTS_ROOT", raising=False)
    return {"spec": parse(script), "env_toml": env_toml, "root": tmp_path}


def compile_from(spec, *argv: str) -> CompiledJob:
    gctx, rest = split_global_args(list(argv))
    return compile_job(spec, recipe_config_from(gctx, rest))


def test_fields_of_a_batch_job(recipe):
    job = compile_from(recipe["spec"], "--batch", "dev", "--dry-run", "train.iters=3", "--", "--flag")

    assert (job.mode, job.attached, job.dry_run, job.is_local) == ("batch", False, True, False)
    assert job.name == "test/train" and job.launch == "torchrun" and job.executor == "slurm"
    assert job.passthrough == ("--flag",)
    assert job.env_file is not None and Path(job.env_file.path) == recipe["env_toml"]
    assert job.profile is not None and job.profile.name == "dev"
    assert job.train_config.train.iters == 3 and job.train_config.model.layers == 2
    # the profile beats the runspec's resources, and says where it came from
    assert job.run_env["nodes"] == 2 and job.run_env["gpus_per_node"] == 0
    assert job.env_sources["nodes"].startswith("env.toml:")
    assert job.sections["cli"]["default_profile"] == "dev"
    assert job.job_config.run.profile == "dev"


def test_local_when_no_profile(recipe):
    job = compile_from(recipe["spec"])
    assert (job.mode, job.attached, job.is_local, job.profile) == ("local", True, True, None)
    # the runspec's resources are the defaults of run.env
    assert job.run_env["gpus_per_node"] == 4


def test_attached_run(recipe):
    job = compile_from(recipe["spec"], "--run", "dev")
    assert (job.mode, job.attached) == ("run", True)


def test_is_frozen_all_the_way_down(recipe):
    job = compile_from(recipe["spec"], "--batch", "dev")
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.mode = "local"  # type: ignore[misc]
    with pytest.raises(TypeError):
        job.run_env["nodes"] = 9  # type: ignore[index]
    with pytest.raises(TypeError):
        job.sections["cli"]["default_profile"] = "x"  # type: ignore[index]


def test_env_toml_is_read_once(recipe):
    """After compile_job nothing reads env.toml again: remove the file, and the
    registry, the saved configs, the packager and the exact dry-run script all
    still come out of the profile and sections the job was compiled with."""
    from rich.console import Console

    from nemo_runspec.cli.display import show_dry_run
    from nemo_runspec.job.packager import packager_for
    from nemo_runspec.slurm import prepare_job

    job = compile_from(recipe["spec"], "--batch", "dev", "--dry-run")
    recipe["env_toml"].unlink()

    assert Path(job.registry.backend.root) == recipe["root"] / "registry"
    slurm_job = prepare_job(job, *packager_for(job))
    console = Console(record=True, width=200)
    assert show_dry_run(job, slurm_job, console=console) == 0
    text = console.export_text()
    assert "#SBATCH --nodes=2" in text or "--nodes=2" in text
    assert "--partition=debug" in text
    assert "hf_compiledJOBsecret0123456789" not in text


def test_env_file_found_from_flag_then_environment(recipe, tmp_path, monkeypatch):
    other = tmp_path / "elsewhere" / "env.toml"
    other.parent.mkdir()
    other.write_text('[far]\nexecutor = "slurm"\naccount = "a"\npartition = "p"\n')
    job = compile_from(recipe["spec"], "--env-file", str(other), "--batch", "far")
    assert Path(job.env_file.path) == other and job.profile.name == "far"

    monkeypatch.setenv("NEMOTRON_ENV_FILE", str(other))
    assert Path(compile_from(recipe["spec"], "--batch", "far").env_file.path) == other


def test_bare_profile_name_is_refused(recipe):
    with pytest.raises(NemoRunspecError) as err:
        compile_from(recipe["spec"], "dev")
    assert "unexpected argument 'dev'" in str(err.value)
    assert "--run dev" in err.value.hint
    # after -- it is the script's argument
    assert compile_from(recipe["spec"], "--", "dev").passthrough == ("dev",)


def test_profile_without_env_file(recipe):
    recipe["env_toml"].unlink()
    with pytest.raises(NemoRunspecError) as err:
        compile_from(recipe["spec"], "--batch", "dev")
    assert "dev" in str(err.value)


def test_unknown_profile_suggests(recipe):
    with pytest.raises(NemoRunspecError) as err:
        compile_from(recipe["spec"], "--batch", "dvv")
    assert "dev" in str(err.value) + str(getattr(err.value, "hint", ""))


def test_script_config_and_files_agree_on_secrets(recipe):
    """One rule: the literal token is gone from the train config, the saved files
    and the dry-run sections; the bool under a secret-looking name stays."""
    from nemo_runspec.cli.display import dry_run_sections

    job = compile_from(recipe["spec"], "--batch", "dev", "+model.api_key=sk-literal-0123456789abcdefghij")
    token = "hf_compiledJOBsecret0123456789"
    literal = "sk-literal-0123456789abcdefghij"

    script_cfg = job.script_config()
    assert "api_key" not in script_cfg.model
    assert script_cfg.model.use_auth_token is True

    files = job.files()
    sections = dry_run_sections(job.job_config, job.train_config, env_profile=job.profile)
    shown = [files["job.yaml"], files["train.yaml"], sections["job_yaml"], sections["train_yaml"],
             repr(sections["env"])]
    for text in shown:
        assert token not in text and literal not in text
    assert "use_auth_token: true" in files["train.yaml"]
    assert "use_auth_token: true" in sections["train_yaml"]
    assert textwrap.dedent("""\
        model:
          layers: 2
    """) in files["train.yaml"]


def test_credential_shaped_value_under_ordinary_key_is_warned(recipe, capsys):
    token_like = "hf_" + "a1" * 12
    job = compile_from(recipe["spec"], "--batch", "dev", f"+model.repo={token_like}")
    err = capsys.readouterr().err
    assert err.count("model.repo looks like a credential") == 1
    assert "run.not_secret" in err
    assert token_like not in job.files()["train.yaml"]


def test_run_not_secret_keeps_the_value_everywhere(recipe, capsys):
    from nemo_runspec.cli.display import dry_run_sections

    token_like = "hf_" + "b2" * 12
    job = compile_from(recipe["spec"], "--batch", "dev", f"+model.repo={token_like}",
                       "+run.not_secret=[model.repo]")
    assert "looks like a credential" not in capsys.readouterr().err
    assert f"repo: {token_like}" in job.files()["train.yaml"]
    assert f"repo: {token_like}" in dry_run_sections(job.job_config, job.train_config)["train_yaml"]
    # a real secret in the profile is still hidden
    assert "hf_compiledJOBsecret0123456789" not in job.files()["job.yaml"]


def test_run_not_secret_must_be_a_list(recipe):
    with pytest.raises(NemoRunspecError) as err:
        compile_from(recipe["spec"], "--batch", "dev", "+run.not_secret=model.repo")
    assert "run.not_secret" in str(err.value)
