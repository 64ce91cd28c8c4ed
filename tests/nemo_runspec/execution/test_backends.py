"""Profile keys -> nemo-run's Docker, SkyPilot, DGX Cloud and Lepton executors, checked against
the real classes: every field we set exists with a matching type, the executors construct, and
DGX Cloud / Lepton are driven up to the request they send (no network)."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from nemo_runspec.env.model import EnvProfileModel
from nemo_runspec.env.registry import backend_class, builtin_names
from nemo_runspec.errors import ExecutionError
from nemo_runspec.execution.backends import Platform, build_executor, executor_fields, platform
from tests.nemotron_cli import NEMOTRON

#: the built-ins on nemo-run's other executors (their classes declare the executor and its fields)
PLATFORMS = [n for n in builtin_names() if isinstance(backend_class(n), Platform)]

PROFILES = {
    "docker": {"executor": "docker", "container_image": "img:1", "ipc_mode": "host", "runtime": "nvidia",
               "shm_size": "16g", "ulimits": ["nofile:65536:65536"], "privileged": False, "network": "host",
               "num_gpus": -1, "mounts": ["/data:/data:ro"], "retries": 2},
    "skypilot": {"executor": "skypilot", "cloud": "kubernetes", "region": "r", "gpus": "A100", "cpus": 8,
                 "memory": 64, "instance_type": "x", "use_spot": True, "disk_size": 100, "disk_tier": "best",
                 "ports": ["8080"], "network_tier": "best", "cluster_name": "c", "autodown": True,
                 "idle_minutes_to_autostop": 10, "retry_until_up": True, "file_mounts": {"/a": "/b"},
                 "gpus_per_node": 2},
    "dgxcloud": {"executor": "dgxcloud", "container_image": "img:1", "base_url": "https://dgx.invalid/api/v1",
                 "kube_apiserver_url": "https://k8s.invalid", "client_id": "id", "client_secret": "s3cr3t-abc",
                 "project_name": "proj", "pvc_nemo_run_dir": "/ws/nemo-run",
                 "pvcs": [{"claimName": "ws", "path": "/ws"}], "distributed_framework": "PyTorch",
                 "custom_spec": {"priority": "high"}},
    "lepton": {"executor": "lepton", "container_image": "img:1", "nemo_run_dir": "/shared/nr",
               "resource_shape": "gpu.8xh100", "node_group": "ng", "node_reservation": "res",
               "shared_memory_size": 1024, "image_pull_secrets": ["pull"], "secret_vars": {"HF_TOKEN": "hf"},
               "can_be_preempted": True, "queue_priority": "mid-4000",
               "mounts": [{"path": "/shared", "mount_path": "/shared", "from": "node-nfs:x"}]},
}


def _fields(kind: str) -> dict[str, typing.Any]:
    model = EnvProfileModel.model_validate(PROFILES[kind], context={"complete": True})
    values = {k: v for k, v in model.__dict__.items() if v is not None}
    return executor_fields(kind, values, nodes=2 if kind != "docker" else 1, gpus=2, nproc=2,
                           image=values.get("container_image"), env_vars={"A": "1"})


def _matches(value: typing.Any, annotation: typing.Any) -> bool:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is typing.Any:
        return True
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return any(_matches(value, a) for a in args)
    if annotation is type(None):
        return value is None
    if origin in (list, tuple):
        return isinstance(value, origin) and all(_matches(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(_matches(k, args[0]) and _matches(v, args[1])
                                               for k, v in value.items())
    if annotation is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, annotation)


def test_the_platforms_are_the_four_and_local_and_slurm_are_built_elsewhere() -> None:
    assert PLATFORMS == ["docker", "skypilot", "dgxcloud", "lepton"]
    with pytest.raises(ExecutionError, match="unknown executor 'slurm'"):
        platform("slurm")


@pytest.mark.parametrize("kind", PLATFORMS)
def test_every_field_exists_with_its_type(kind: str) -> None:
    import importlib

    from nemo_runspec._nemo_run import lean

    lean()
    module, _, name = platform(kind).nemo_run_executor.partition(":")
    cls = getattr(importlib.import_module(module), name)
    hints = typing.get_type_hints(cls)
    init = {f.name for f in dataclasses.fields(cls) if f.init}
    fields = _fields(kind)
    for key, value in fields.items():
        assert key in init, f"{name} has no init field {key}"
        assert _matches(value, hints[key]), f"{name}.{key} = {value!r} is not {hints[key]}"
    # every key of the profile that the executor reads reached a field
    assert len(fields) >= len(PROFILES[kind]) - 2


@pytest.mark.parametrize("kind", ["docker", "dgxcloud", "lepton"])
def test_executors_construct_with_our_fields(kind: str) -> None:
    from nemo_run.core.packaging.base import Packager

    executor = build_executor(kind, _fields(kind), packager=Packager())
    assert executor.container_image == "img:1" and executor.env_vars == {"A": "1"}


def test_skypilot_without_skypilot_is_one_line() -> None:
    import nemo_run  # noqa: F401 - a required dependency: never skipped
    try:
        import sky  # noqa: F401
    except ImportError:
        with pytest.raises(ExecutionError, match="needs SkyPilot") as err:
            build_executor("skypilot", _fields("skypilot"), packager=None)
        assert "pip install" in (err.value.hint or "")
    else:  # SkyPilot installed: it constructs with a git packager
        from nemo_run.core.packaging.git import GitArchivePackager

        build_executor("skypilot", _fields("skypilot"), packager=GitArchivePackager())


def test_dgxcloud_payload(tmp_path, monkeypatch) -> None:
    """DGX Cloud up to its HTTP requests: the workload it would create from our fields."""
    import requests
    from nemo_run.core.packaging.base import Packager

    executor = build_executor("dgxcloud", _fields("dgxcloud"), packager=Packager())
    executor.pvc_job_dir = "/ws/nemo-run/x"
    sent: list[tuple[str, dict]] = []

    class Resp:
        status_code = 200
        text = "{}"

        def json(self) -> dict:
            return {"workloadId": "w1", "actualPhase": "Pending"}

    monkeypatch.setattr(requests, "post", lambda url, json=None, headers=None: sent.append((url, json)) or Resp())
    executor.create_training_job("token", "p1", "c1", "nano3-pretrain")
    url, payload = sent[0]
    assert url == "https://dgx.invalid/api/v1/workloads/distributed"
    spec = payload["spec"]
    assert spec["image"] == "img:1" and spec["numWorkers"] == 2 and spec["compute"]["gpuDevicesRequest"] == 2
    assert spec["storage"]["pvc"] == [{"claimName": "ws", "path": "/ws", "existingPvc": True, "readOnly": False}]
    assert spec["environmentVariables"] == [{"name": "A", "value": "1"}] and spec["priority"] == "high"
    assert spec["command"] == "/bin/bash /ws/nemo-run/x/launch_script.sh"


def test_lepton_job_spec(monkeypatch) -> None:
    """Lepton up to its API client: the LeptonJob it would create from our fields (leptonai's own models)."""
    import nemo_run.core.execution.lepton as lep
    from nemo_run.core.packaging.base import Packager

    executor = build_executor("lepton", _fields("lepton"), packager=Packager())
    executor.lepton_job_dir = "/shared/nr/x"
    created = []

    class Client:
        class job:  # noqa: N801 - the API client's attribute
            @staticmethod
            def create(job):
                created.append(job)
                return job

    monkeypatch.setattr(lep, "APIClient", Client)
    monkeypatch.setattr(type(executor), "_node_group_id",
                        lambda self, client: type("NG", (), {"metadata": type("M", (), {"id_": "ng-1"})()})())
    monkeypatch.setattr(type(executor), "_valid_node_ids", lambda self, ng, client: {"n1"})
    job = executor.create_lepton_job("nano3-pretrain")
    spec = created[0].spec
    assert job is created[0] and spec.resource_shape == "gpu.8xh100" and spec.completions == 2
    assert spec.mounts[0].from_ == "node-nfs:x" and spec.mounts[0].mount_path == "/shared"
    assert [e.name for e in spec.envs] == ["A", "HF_TOKEN"] and spec.envs[1].value_from.secret_name_ref == "hf"
    assert spec.queue_config.priority_class == "mid-4000" and spec.reservation_config.reservation_id == "res"


def test_a_skypilot_dry_run_shows_the_fields_without_skypilot(tmp_path) -> None:
    """--dry-run is offline and needs nothing installed: the fields SkyPilot would get and the
    job script; submitting says what to install."""
    import os
    import subprocess

    nemotron = NEMOTRON
    (tmp_path / "env.toml").write_text('[sky]\nexecutor = "skypilot"\ncontainer_image = "img:1"\n'
                                       'cloud = "kubernetes"\nenv_vars = { HF_TOKEN = "skySECRET0123456789" }\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), NEMOTRON_ENV_FILE=str(tmp_path / "env.toml"), COLUMNS="200")

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(nemotron), "nano3", "data", "prep", "pretrain", "-c", "tiny", "--batch", "sky",
                               *extra], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180,
                              stdin=subprocess.DEVNULL)

    dry = run("--dry-run")
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "SkypilotExecutor" in dry.stdout and "cloud: kubernetes" in dry.stdout and "#!/bin/bash" in dry.stdout
    assert "skySECRET0123456789" not in dry.stdout + dry.stderr
    assert not (tmp_path / "home" / "jobs").exists()
    submit = run()
    assert submit.returncode == 1 and "needs SkyPilot, which is not installed" in submit.stderr


def _dry_run(tmp_path, toml: str, profile: str, extra_env: dict | None = None):
    import os
    import subprocess

    nemotron = NEMOTRON
    (tmp_path / "env.toml").write_text(toml)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), NEMOTRON_ENV_FILE=str(tmp_path / "env.toml"), COLUMNS="200",
               **(extra_env or {}))
    proc = subprocess.run([str(nemotron), "nano3", "data", "prep", "pretrain", "-c", "tiny", "--batch", profile,
                           "--dry-run"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL)
    assert not (tmp_path / "home" / "jobs").exists()  # offline: nothing written
    return proc


DGX_TOML = """
[dgx]
executor = "dgxcloud"
container = "nvcr.io/nvidia/nemo:25.11"
base_url = "https://dgx.invalid/api/v1"
kube_apiserver_url = "https://k8s.invalid"
app_id = "my-app"
app_secret = "${oc.env:DGXC_APP_SECRET}"
project_name = "proj"
pvc_nemo_run_dir = "/ws/nemo-run"
pvcs = [{ claimName = "ws", path = "/ws" }]
"""

LEPTON_TOML = """
[lep]
executor = "lepton"
container_image = "nvcr.io/nvidia/nemo:25.11"
nemo_run_dir = "/shared/nr"
resource_shape = "gpu.8xh100-80gb"
node_group = "ng"
mounts = [{ path = "/shared", mount_path = "/shared", from = "node-nfs:x" }]
env_vars = ["NCCL_DEBUG=INFO", "HF_TOKEN=hf_lepSECRET0123456789abcdef"]
"""


def test_a_dgxcloud_dry_run_is_offline_with_the_secret_hidden(tmp_path) -> None:
    secret = "dgxSECRETvalue0123456789"
    proc = _dry_run(tmp_path, DGX_TOML, "dgx", {"DGXC_APP_SECRET": secret})
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "DGXCloudExecutor" in out and "client_id: my-app" in out and "project_name: proj" in out
    assert "container_image: nvcr.io/nvidia/nemo:25.11" in out and "#!/bin/bash" in out
    assert secret not in out + proc.stderr and "client_secret: '***REDACTED***'" in out.replace('"', "'")


def test_a_lepton_dry_run_with_a_secret_shows_the_job_and_what_submission_refuses(tmp_path) -> None:
    proc = _dry_run(tmp_path, LEPTON_TOML, "lep")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "LeptonExecutor" in out and "resource_shape: gpu.8xh100-80gb" in out and "NCCL_DEBUG: INFO" in out
    assert "hf_lepSECRET0123456789abcdef" not in out + proc.stderr
    assert "HF_TOKEN=***REDACTED***" in out
    assert "warning: submitting this job would stop here" in proc.stderr and "secret_vars" in proc.stderr
