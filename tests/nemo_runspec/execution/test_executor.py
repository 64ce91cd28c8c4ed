"""Unit tests: profile keys -> nemo_run.SlurmExecutor, env var split, startup lines."""

from __future__ import annotations

import subprocess
from pathlib import Path

import nemo_run as run  # noqa: E402 - a required dependency: a broken install fails, never skips
import pytest

from nemo_runspec.env.profile import EnvProfile
from nemo_runspec.errors import ExecutionError
from nemo_runspec.execution import (
    create_executor,
    get_startup_commands,
    job_slug,
    shell_value,
    split_env_vars,
)
from nemo_runspec.spec.models import Runspec, RunspecResources, RunspecRun


def spec(launch="direct", nodes=3, gpus=4, image="nvcr.io/nvidia/nemo:25.01", env=None):
    return Runspec(name="nano3/pretrain", script_path=Path("train.py"), image=image, run=RunspecRun(launch=launch),
                   resources=RunspecResources(nodes=nodes, gpus_per_node=gpus), env=env or {})


BASE = {"executor": "slurm", "account": "acct1", "partition": "gen"}


def make(profile, *, mode="batch", runspec=None, env_vars=None, tmp_path=None, **kw):
    return create_executor(env=profile, mode=mode, job_name="x", runspec=runspec or spec(),
                           env_vars=env_vars or {}, packager=run.Packager(),
                           job_dir=str(tmp_path) if tmp_path else "/tmp/nemotron-test-base", **kw)


def test_every_profile_key_maps(tmp_path):
    prof = dict(BASE, nodes=2, ntasks_per_node=4, gpus_per_node=2, cpus_per_task=3, mem="10G",
                time="01:02:03", exclusive=True, qos="high", constraint="a100", exclude="n9",
                gres="gpu:2", container_image="img:1", mounts=["/a:/b"], retries=2,
                job_name_prefix="pfx-", srun_args=["--mpi=none"],
                sbatch_options={"mail-type": "END"}, dependency_type="afterany")
    ex = make(prof, tmp_path=tmp_path)
    assert isinstance(ex, run.SlurmExecutor)
    got = {k: getattr(ex, k) for k in ("account", "partition", "nodes", "ntasks_per_node",
                                        "gpus_per_node", "cpus_per_task", "mem", "time",
                                        "exclusive", "qos", "constraint", "exclude", "gres",
                                        "container_image", "container_mounts", "retries",
                                        "job_name_prefix", "srun_args",
                                        "additional_parameters", "dependency_type")}
    assert got == {"account": "acct1", "partition": "gen", "nodes": 2, "ntasks_per_node": 4,
                   "gpus_per_node": 2, "cpus_per_task": 3, "mem": "10G", "time": "01:02:03",
                   "exclusive": True, "qos": "high", "constraint": "a100", "exclude": "n9",
                   "gres": "gpu:2", "container_image": "img:1", "container_mounts": ["/a:/b"],
                   "retries": 2, "job_name_prefix": "pfx-", "srun_args": ["--mpi=none"],
                   "additional_parameters": {"mail-type": "END"}, "dependency_type": "afterany"}
    assert ex.poll_estimated_start_time is False


@pytest.mark.parametrize(("mode", "expected"), [("run", "interactive"), ("batch", "backfill")])
def test_partition_by_mode(mode, expected):
    prof = dict(BASE, run_partition="interactive", batch_partition="backfill")
    assert make(prof, mode=mode).partition == expected
    assert make(dict(BASE), mode=mode).partition == "gen"


def test_runspec_resources_are_defaults():
    ex = make(dict(BASE))
    assert (ex.nodes, ex.gpus_per_node) == (3, 4)
    ex = make(dict(BASE, nodes=1, gpus_per_node=8))
    assert (ex.nodes, ex.gpus_per_node) == (1, 8)


def test_container_image_rules():
    assert make(dict(BASE)).container_image == "nvcr.io/nvidia/nemo:25.01"
    assert make(dict(BASE, container_image="mine:2")).container_image == "mine:2"
    for off in ("", "none", "None"):
        assert make(dict(BASE, container_image=off)).container_image is None
    assert make(dict(BASE), runspec=spec(image=None)).container_image is None


def test_torchrun_nproc_from_gpus_and_cpu_fallback():
    ex = make(dict(BASE), runspec=spec(launch="torchrun", gpus=4))
    assert isinstance(ex.launcher, run.Torchrun) and ex.torchrun_nproc_per_node == 4
    ex = make(dict(BASE, gpus_per_node=0), runspec=spec(launch="torchrun"))
    assert ex.torchrun_nproc_per_node == 1 and ex.gpus_per_node is None
    ex = make(dict(BASE, gpus_per_node=0, nproc_per_node=2), runspec=spec(launch="torchrun"))
    assert ex.torchrun_nproc_per_node == 2
    assert make(dict(BASE), runspec=spec(launch="direct")).launcher is None


def test_no_account_means_no_account_option():
    # clusters without Slurm accounts exist; one that needs an account refuses the job itself
    ex = make({"executor": "slurm", "partition": "gen"})
    assert ex.account is None


def test_bad_values_raise():
    with pytest.raises(ExecutionError, match="secret"):
        make(dict(BASE), env_vars={"HF_TOKEN": "x"})


def test_dependencies_become_handles():
    ex = make(dict(BASE), dependencies=["1234"])
    assert ex.parse_deps() == ["1234"]


def test_build_env_vars_split_and_rules():
    rs = spec(env={"A": "1", "B": "runspec"})
    prof = dict(BASE, env_vars={"B": "profile", "MY_SECRET": "s3cr3t"})
    environ = {"HF_TOKEN": "hf_abc", "WANDB_API_KEY": "wk"}
    plain, secrets = split_env_vars({"train": {"x": 1}}, prof, runspec=rs, environ=environ)
    # the job gets the submitter's artifact registry root (it cannot see env.toml)
    assert plain.pop("NEMOTRON_ARTIFACTS_ROOT")
    assert plain == {"A": "1", "B": "profile"}
    assert secrets == {"MY_SECRET": "s3cr3t"}  # no wandb, no HF use -> nothing forwarded
    cfg = {"run": {"wandb": {"project": "p", "entity": "e"}}, "model": "hf://org/model"}
    plain, secrets = split_env_vars(cfg, prof, runspec=rs, environ=environ)
    assert plain["WANDB_PROJECT"] == "p" and plain["WANDB_ENTITY"] == "e"
    assert secrets == {"MY_SECRET": "s3cr3t", "WANDB_API_KEY": "wk", "HF_TOKEN": "hf_abc"}
    plain, secrets = split_env_vars({"run": {"wandb": {"enabled": False, "project": "p"}}}, prof,
                                    environ=environ)
    assert "WANDB_PROJECT" not in plain and "WANDB_API_KEY" not in secrets
    # a top-level `wandb:` section is read by no training backend: it forwards nothing
    plain, secrets = split_env_vars({"wandb": {"project": "p"}}, prof, environ=environ)
    assert "WANDB_PROJECT" not in plain and "WANDB_API_KEY" not in secrets


def test_startup_commands_and_slug():
    assert get_startup_commands({"startup_commands": "echo a"}) == ["echo a"]
    assert get_startup_commands({"startup_commands": ["a", " ", "b"]}) == ["a", "b"]
    assert get_startup_commands(EnvProfile("dev", None, ["dev"], {}, {})) == []
    assert job_slug("nano3/pretrain") == "nano3-pretrain"
    assert job_slug("Nano3 / Data Prep") == "nano3-data-prep"


@pytest.mark.parametrize("value", ["plain", "a b c", 'q"uote', "back\\slash", "t`id`", "x;y|z"])
def test_shell_value_roundtrips_through_bash(value):
    out = subprocess.run(["bash", "-c", f'export K={shell_value(value)}; printf %s "$K"'],
                         capture_output=True, text=True, check=True).stdout
    assert out == value


def test_wandb_settings_from_logger_and_env_toml_section(tmp_path, monkeypatch):
    env_toml = tmp_path / "env.toml"
    env_toml.write_text('[wandb]\nentity = "team"\nproject = "fromtoml"\napi_key_env = "MY_WB_KEY"\n'
                        'mode = "offline"\ngroup = "g1"\ntags = ["a", "b"]\n')
    monkeypatch.setenv("NEMOTRON_ENV_FILE", str(env_toml))
    cfg = {"logger": {"wandb_project": "fromlogger", "wandb_exp_name": "run1"}}
    plain, secrets = split_env_vars(cfg, dict(BASE), environ={"MY_WB_KEY": "wk-123456"})
    assert plain["WANDB_PROJECT"] == "fromlogger" and plain["WANDB_NAME"] == "run1"
    assert plain["WANDB_ENTITY"] == "team"  # from env.toml [wandb]
    assert (plain["WANDB_MODE"], plain["WANDB_RUN_GROUP"], plain["WANDB_TAGS"]) == ("offline", "g1", "a,b")
    assert secrets["WANDB_API_KEY"] == "wk-123456"  # from the variable api_key_env names
    # W&B off (no logger.wandb_project, no wandb section): nothing W&B-related is sent
    plain, secrets = split_env_vars({"logger": {"wandb_project": None}}, dict(BASE),
                                    environ={"MY_WB_KEY": "wk-123456", "WANDB_API_KEY": "x"})
    assert not any(k.startswith("WANDB") for k in {**plain, **secrets})


def test_cancel_command_also_removes_a_leftover_secrets_file(tmp_path):
    from nemo_runspec.slurm import SubmittedJob, follow_commands, prepare_job

    job = prepare_job(env=dict(BASE, container_image=""), mode="batch", runspec=spec(),
                      packager=run.Packager(), script="x.py", secrets={"HF_TOKEN": "hf_x"},
                      base_dir=tmp_path)
    sub = SubmittedJob(job_id="42", job_dir=job.job_dir, log_path="l", sbatch_log_path="s",
                       sbatch_path="p", name=job.name, prepared=job)
    cancel = dict(follow_commands(sub))["cancel"]
    assert cancel.startswith("scancel 42; rm -f ") and job.secret_path in cancel
