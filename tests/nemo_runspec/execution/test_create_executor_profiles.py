"""``create_executor(env=..., env_vars=..., packager=...)``, the reference's call, with every
profile form the CLI accepts (issue 11): the other nemo-run executors, and a plain dict read
exactly like an env.toml profile (synonyms, ``env_vars`` lists, unknown keys refused)."""

from __future__ import annotations

import nemo_run as run  # noqa: E402 - a required dependency: a broken install fails, never skips
import pytest

from nemo_runspec.errors import EnvFileError, ExecutionError
from nemo_runspec.execution import build_env_vars, create_executor

DGX = {"executor": "dgxcloud", "container": "img:dgx", "base_url": "https://dgx.invalid/api/v1",
       "kube_apiserver_url": "https://k8s.invalid", "app_id": "id", "app_secret": "s3cr3t-abcdef",
       "project_name": "proj", "pvc_nemo_run_dir": "/ws/nemo-run",
       "pvcs": [{"claimName": "ws", "path": "/ws"}], "nodes": 2, "gpus_per_node": 8}
LEPTON = {"executor": "lepton", "container_image": "img:lep", "nemo_run_dir": "/shared/nr",
          "resource_shape": "gpu.8xh100", "node_group": "ng",
          "mounts": [{"path": "/shared", "mount_path": "/shared", "from": "node-nfs:x"}]}


def test_a_docker_profile_from_env_toml(tmp_path):
    from nemo_runspec.env import load_env_profile

    (tmp_path / "env.toml").write_text('[box]\nexecutor = "docker"\ncontainer = "img:1"\nipc_mode = "host"\n'
                                       'shm_size = "16g"\nmounts = ["/data:/data:ro"]\n')
    env = load_env_profile("box", tmp_path / "env.toml")
    executor = create_executor(env=env, env_vars={"NCCL_DEBUG": "INFO"}, packager=run.Packager())

    assert type(executor).__name__ == "DockerExecutor"
    assert (executor.container_image, executor.ipc_mode, executor.shm_size) == ("img:1", "host", "16g")
    assert executor.volumes == ["/data:/data:ro"] and executor.env_vars == {"NCCL_DEBUG": "INFO"}


def test_dgxcloud_and_lepton_profiles_as_dicts():
    dgx = create_executor(env=DGX, env_vars={"A": "1"}, packager=run.Packager())
    assert type(dgx).__name__ == "DGXCloudExecutor"
    assert (dgx.container_image, dgx.nodes, dgx.gpus_per_node, dgx.client_id) == ("img:dgx", 2, 8, "id")
    assert dgx.pvcs == [{"claimName": "ws", "path": "/ws", "existingPvc": True, "readOnly": False}] \
        or dgx.pvcs == [{"claimName": "ws", "path": "/ws"}]

    lepton = create_executor(env=LEPTON, env_vars={}, packager=run.Packager())
    assert type(lepton).__name__ == "LeptonExecutor"
    assert (lepton.resource_shape, lepton.node_group, lepton.container_image) == ("gpu.8xh100", "ng", "img:lep")


def test_a_skypilot_profile_is_skypilots_executor_or_says_what_to_install():
    try:
        import sky  # noqa: F401
    except ImportError:
        with pytest.raises(ExecutionError, match="needs SkyPilot") as err:
            create_executor(env={"executor": "skypilot", "cloud": "kubernetes"}, env_vars={}, packager=None)
        assert "unknown executor" not in str(err.value)
    else:
        from nemo_run.core.packaging.git import GitArchivePackager

        ex = create_executor(env={"executor": "skypilot", "cloud": "kubernetes"}, env_vars={},
                             packager=GitArchivePackager())
        assert type(ex).__name__ == "SkypilotExecutor"


def test_a_docker_profile_with_secret_file_says_it_is_slurms():
    with pytest.raises(ExecutionError, match="secret_file= is sourced by the Slurm"):
        create_executor(env={"executor": "docker", "container_image": "i"}, env_vars={},
                        packager=run.Packager(), secret_file="/x/.s")


def test_a_dict_env_with_container_gets_the_image():
    ex = create_executor(env={"executor": "slurm", "container": "nvcr.io/x:1"}, env_vars={},
                         packager=run.Packager(), job_dir="/tmp/nemotron-test-base")
    assert ex.container_image == "nvcr.io/x:1"


def test_a_dict_env_with_an_unknown_key_is_an_error_with_did_you_mean():
    with pytest.raises(EnvFileError, match="partiton") as err:
        create_executor(env={"executor": "slurm", "partiton": "gpu"}, env_vars={}, packager=run.Packager())
    assert "partition" in str(err.value) + str(err.value.hint or "")


def test_a_dict_env_with_a_bad_env_vars_list_entry_is_an_error():
    with pytest.raises(EnvFileError, match='must be a "NAME=value" string'):
        create_executor(env={"executor": "slurm", "env_vars": ["NCCL_DEBUG"]}, env_vars={},
                        packager=run.Packager())


def test_a_dict_env_key_the_executor_does_not_read_is_an_error():
    with pytest.raises(EnvFileError, match="ipc_mode"):
        create_executor(env={"executor": "slurm", "ipc_mode": "host"}, env_vars={}, packager=run.Packager())


def test_build_env_vars_reads_an_env_vars_list():
    env = {"executor": "slurm", "env_vars": ["NCCL_DEBUG=INFO", "OPTS=a=b"]}
    got = build_env_vars({}, env, environ={})
    assert (got["NCCL_DEBUG"], got["OPTS"]) == ("INFO", "a=b")


def test_the_secret_from_build_env_vars_is_refused_with_how_to_pass_it():
    job_config = {"run": {"wandb": {"project": "p"}}}  # W&B on (nemo_runspec.runtime.wandb_switch)
    env = {"executor": "slurm"}
    env_vars = build_env_vars(job_config, env, environ={"WANDB_API_KEY": "wk-12345678"})
    with pytest.raises(ExecutionError, match="WANDB_API_KEY") as err:
        create_executor(env=env, env_vars=env_vars, packager=run.Packager())
    assert "secret_file=" in (err.value.hint or "") and "split=True" in (err.value.hint or "")
    assert "wk-12345678" not in str(err.value) + (err.value.hint or "")
