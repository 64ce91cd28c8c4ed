"""Which profile keys each executor reads and needs (env/executor_keys.py): a key the executor
does not read, a missing required key and executor-specific shapes are each one message that
starts with the key."""

from __future__ import annotations

from types import SimpleNamespace

from nemo_runspec.env.executor_keys import (
    executor_problem,
    ssh_job_dir_problem,
    unused_executor_keys,
)

DOCKER = {"container_image": "img:1"}


def test_keys_another_executor_reads_are_unused_local_and_slurm_stay_quiet_on_each_others():
    assert unused_executor_keys("docker", {"shm_size": "1g", "partition": "p", "cloud": None}) == ["partition"]
    assert unused_executor_keys("local", {"partition": "p", "ray_timeout": 5}) == []  # slurm keys: quiet
    assert unused_executor_keys("local", {"shm_size": "1g"}) == ["shm_size"]
    assert unused_executor_keys("slurm", {"local_nproc": 2}) == []


def test_an_unused_key_names_its_readers():
    assert executor_problem("docker", {**DOCKER, "use_spot": True}) == (
        "use_spot = true is not used by executor = \"docker\" (read only by executor = 'skypilot'; "
        "remove it or change executor)")


def test_a_required_key_is_named_with_an_example():
    assert executor_problem("docker", {}).startswith('executor = "docker" requires container_image (the image')
    assert executor_problem("docker", DOCKER) is None


def test_mount_shapes_follow_the_executor():
    assert executor_problem("docker", {**DOCKER, "mounts": [{"path": "/a"}]}).startswith(
        'mounts = [...] of executor = "docker" are "src:dst[:flags]" strings')
    lepton = {"container_image": "i", "nemo_run_dir": "/n", "resource_shape": "gpu.1xh100", "node_group": "g"}
    assert executor_problem("lepton", {**lepton, "mounts": ["/a:/a"]}).startswith(
        'mounts = [...] of executor = "lepton" are tables')
    assert executor_problem("lepton", {**lepton, "mounts": [{"path": "/s", "mount_path": "/x", "form": "n"}]}) \
        .startswith("mounts = [...] entry 0 has unknown key 'form' (did you mean 'from'?")
    assert executor_problem("lepton", {**lepton, "can_preempt": True}) == (
        'can_preempt = true requires queue_priority (e.g. queue_priority = "mid-4000")')
    assert executor_problem("lepton", {**lepton, "mounts": [{"path": "/s", "mount_path": "/x", "from": "n"}]}) is None


def test_dgxcloud_run_dir_must_be_on_a_pvc_and_skypilot_infra_replaces_cloud():
    dgx = {"container_image": "i", "base_url": "u", "kube_apiserver_url": "k", "client_id": "c",
           "client_secret": "s", "project_name": "p", "pvc_nemo_run_dir": "/other/runs",
           "pvcs": [SimpleNamespace(path="/workspace")]}
    assert executor_problem("dgxcloud", dgx).startswith("pvc_nemo_run_dir = '/other/runs' is on none of the pvcs")
    assert executor_problem("dgxcloud", {**dgx, "pvc_nemo_run_dir": "/workspace/runs"}) is None
    assert executor_problem("skypilot", {"infra": "aws", "region": "us"}).startswith("infra = 'aws' replaces cloud")


def test_the_ssh_job_dir_problem_quotes_the_profile_with_the_key_to_add():
    text = ssh_job_dir_problem("login1", "ana", None)
    assert text.endswith('tunnel = "ssh", host = "login1", user = "ana", remote_job_dir = "/lustre/ana/nemotron-jobs"')
