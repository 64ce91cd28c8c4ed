"""Tests for nemo_runspec.env.validation (and the model's keys)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nemo_runspec import env as envmod
from nemo_runspec.env import (
    load_env_profile,
)
from nemo_runspec.errors import EnvFileError
from tests.nemo_runspec.env.env_toml import line_no, write

REPO = Path(__file__).resolve().parents[3]


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("body", "needle", "must_contain"),
    [
        ("nodez = 2", "nodez", ["unknown key 'nodez'", "did you mean 'nodes'"]),
        ('setup = "pip install x"', "setup", ["unknown key 'setup'", "startup_commands"]),
        ('nodes = "4"', "nodes", ["'nodes'", "integer", "string '4'"]),
        ('exclusive = "yes"', "exclusive", ["'exclusive'", "boolean", "'yes'"]),
        ('executor = "slrum"', "executor", ["'executor'", "'slurm'", "'slrum'"]),
        ('time = "4h"', "time", ["'time'", "Slurm time", "'4h'"]),
        ('time = "1-25"', "time", ["'time'", "Slurm time"]),
        ('mounts = ["/only-src"]', "mounts", ["'mounts'", "src:dst"]),
        ("mounts = 3", "mounts", ["'mounts'", "array of (string or table of strings)"]),
        ("retries = -1", "retries", ["'retries'", "-1"]),
        ("port = 70000", "port", ["'port'", "70000"]),
        ('packager = "zip"', "packager", ["'packager'", "'zip'", "'git'"]),
        ("env_vars = { OMP_NUM_THREADS = 1 }", "OMP", ["'env_vars.OMP_NUM_THREADS'", "string", 'quote it: "1"']),
        ('startup_commands = "echo hi"', "startup", ["'startup_commands'", "array of strings"]),
        ("sbatch_options = { reservation = [1] }", "sbatch", ["'sbatch_options.reservation'"]),
        ('tunnel = "ssh"', "tunnel", ['tunnel = "ssh" requires host']),
        ('packager = "pattern"', "packager", ["packager_include_pattern"]),
        ("nproc_per_node = 4\ngpus_per_node = 8", "nproc", ["nproc_per_node", "gpus_per_node", "agree"]),
        ('dependency_type = "afterwards"', "dependency", ["'dependency_type'", "'afterok'"]),
    ],
)
def test_profile_key_errors(tmp_path, body, needle, must_contain):
    path = write(tmp_path / "env.toml", f'[p]\ndescription = "x"\n{body}\n')
    with pytest.raises(EnvFileError) as e:
        load_env_profile("p", path)
    msg = str(e.value)
    assert msg.startswith(f"{path}:{line_no(path, needle)}:"), msg
    for part in must_contain:
        assert part in msg, (part, msg)
    assert "\n" not in msg and "pydantic" not in msg and "errors.pydantic.dev" not in msg


def test_slurm_without_account_is_a_valid_profile(tmp_path):
    # clusters without accounts exist; one that needs an account says so at submission
    path = write(tmp_path / "env.toml", '[s]\nexecutor = "slurm"\npartition = "p"\n')
    prof = load_env_profile("s", path)
    assert prof.executor == "slurm" and "account" not in prof.values


def test_account_may_come_from_child_or_parent(tmp_path):
    path = write(
        tmp_path / "env.toml",
        '[base]\nexecutor = "slurm"\n[a]\nextends = "base"\naccount = "x"\n'
        '[b]\naccount = "y"\n[c]\nextends = "b"\nexecutor = "slurm"\n',
    )
    assert load_env_profile("a", path).values["account"] == "x"
    assert load_env_profile("c", path).values["account"] == "y"


def test_error_in_parent_points_to_parent_line(tmp_path):
    path = write(tmp_path / "env.toml", '[base]\nnodes = "two"\n[dev]\nextends = "base"\n')
    with pytest.raises(EnvFileError) as e:
        load_env_profile("dev", path)
    assert str(e.value).startswith(f"{path}:2:") and "[base]" in str(e.value)


def test_secret_value_not_shown_in_type_error(tmp_path):
    path = write(tmp_path / "env.toml", "[p]\nenv_vars = { HF_TOKEN = 123456789 }\n")
    with pytest.raises(EnvFileError) as e:
        load_env_profile("p", path)
    assert "HF_TOKEN" in str(e.value) and "123456789" not in str(e.value)


def test_valid_full_profile_all_keys(tmp_path):
    path = write(
        tmp_path / "env.toml",
        """
        [full]
        executor = "slurm"
        description = "everything"
        account = "a"
        partition = "p"
        run_partition = "rp"
        batch_partition = "bp"
        nodes = 2
        ntasks_per_node = 1
        nproc_per_node = 4
        cpus_per_task = 16
        mem = "0"
        time = "1-00:30:00"
        exclusive = true
        qos = "high"
        constraint = "a100"
        exclude = "node1"
        gres = "gpu:4"
        container_image = "nvcr.io/nvidia/pytorch:25.01-py3"
        mounts = ["/a:/a", "${auto_mount:git+https://example.com/org/tool.git@v1,/opt/tool}"]
        env_vars = { X = "1" }
        secret_env_vars = ["X"]
        public_env_vars = ["Y"]
        startup_commands = ["echo $HOME"]
        retries = 2
        job_name_prefix = "me-"
        srun_args = ["--mpi=pmix"]
        sbatch_options = { reservation = "r", "gpu-bind" = "none", requeue = true, nice = 5 }
        check_uncommitted = false
        include_submodules = false
        tunnel = "ssh"
        host = "login"
        user = "me"
        port = 2222
        identity = "~/.ssh/id_ed25519"
        remote_job_dir = "/lustre/jobs"
        job_dir = "/tmp/jobs"
        workdir = "/opt/project"
        squash_dir = "/lustre/images"
        dependency_type = "afterany"
        ray_port_base = 20000
        ray_timeout = 600
        local_nproc = 2
        gpu_type = "h100"
        precision = "bf16"
        max_array_size = 1001
        max_parallel = 4
        dry_run = false
        detach = true
        packager_include_pattern = ["src/**/*.py"]
        packager_relative_path = "."
        packager_subpath = "src"

        [full.profiling]
        nsys = true
        start_step = 5
        end_step = 7
        ranks = [0, 8]
        output_dir = "/lustre/profiles"
        trace = "nvtx,cuda,osrt"
        extra_args = ["--sample=cpu"]

        [full.packagers.code]
        packager = "git"
        subpath = "src"

        [full.packagers.configs]
        packager = "pattern"
        include_pattern = "configs/*.yaml"
        """,
    )
    prof = load_env_profile("full", path)
    assert prof.values["gpus_per_node"] == 4 and "nproc_per_node" not in prof.values  # alias folded
    assert prof.values["packagers"]["configs"]["include_pattern"] == "configs/*.yaml"
    assert prof.get("check_uncommitted") is False
    assert prof.values["profiling"]["ranks"] == [0, 8] and prof.values["profiling"]["nsys"] is True
    keys = set(envmod.PROFILE_KEYS)
    # every other key is set; `packager` is left out because no one packager reads every
    # packager key, and naming one makes the keys it does not read errors (test_packager_keys.py)
    # and `resilience` because it cannot go with `retries` (both requeue; test_resilience.py)
    # and the keys only nemo-run's other executors read (ipc_mode, ...): errors in a Slurm profile
    from nemo_runspec.env.executor_keys import key_readers, lenient

    others = {k for k, users in key_readers().items() if lenient().isdisjoint(users)}
    assert set(prof.values) == keys - {"extends", "nproc_per_node", "packager", "resilience"} - others


def test_defaults_separate_from_values(tmp_path):
    path = write(tmp_path / "env.toml", '[l]\ndescription = "local"\n')
    prof = load_env_profile("l", path)
    assert "executor" not in prof.values
    assert prof.get("executor") == "local" and prof.executor == "local"
    assert prof.get("check_uncommitted") is True
    assert prof.get("dependency_type") == "afterok"
    assert prof.get("executor", "mine") == "mine"
    assert prof.get("no_such_key") is None
