"""Which profile keys each executor reads (the one table; env.toml validation and the docs use it).

nemo-run has more executors than Slurm: ``docker``, ``skypilot``, ``dgxcloud`` and
``lepton`` profiles set keys of their own (mapped field by field onto nemo-run's
executor classes by :mod:`nemo_runspec.execution.executors`). A key that the
profile's executor does not read is an error at its line, not ignored:
``ipc_mode`` in a Slurm profile, or ``partition`` in a Docker one, would
otherwise look like it did something. Keys every executor reads (``env_vars``,
``container_image``, ``nodes``, packaging, ...) are not listed.

Standard library and pydantic only (imported with :mod:`nemo_runspec.env.model`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WrapValidator

from nemo_runspec.env.registry import BUILTIN, LENIENT, accept_plugin, builtin_names

_STRICT = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)

#: the built-in executor names (declared once: nemo_runspec.env.registry)
ExecutorName = Literal[builtin_names()]  # type: ignore[valid-type]
#: env.toml's ``executor``: a built-in name, or one an installed plug-in registers
ExecutorKey = Annotated[ExecutorName | None, WrapValidator(accept_plugin)]

#: the built-in executors that refuse a key they do not read (nemo-run's other executor classes)
OTHER_EXECUTORS = tuple(name for name in BUILTIN if name not in LENIENT)

_SLURM_ONLY = (
    "account", "partition", "run_partition", "batch_partition", "ntasks_per_node", "cpus_per_task",
    "mem", "time", "exclusive", "qos", "constraint", "exclude", "gres", "sbatch_options", "srun_args",
    "resilience", "profiling", "job_name_prefix", "dependency_type", "tunnel", "host", "user", "port", "identity",
    "remote_job_dir", "squash_dir", "ray_port_base", "ray_timeout", "max_array_size",
)

#: profile key -> the executors that read it (keys read by every executor are absent)
EXECUTOR_KEY_USERS: Mapping[str, tuple[str, ...]] = {
    **dict.fromkeys(_SLURM_ONLY, ("slurm",)),
    "ray_port_base": ("slurm", "local"),
    "ray_timeout": ("slurm", "local"),
    "local_nproc": ("local",),
    "retries": ("slurm", "docker"),
    # docker (nemo-run DockerExecutor)
    **dict.fromkeys(("runtime", "ipc_mode", "shm_size", "ulimits", "privileged", "network", "num_gpus"),
                    ("docker",)),
    # skypilot (nemo-run SkypilotExecutor)
    **dict.fromkeys(("cloud", "region", "zone", "infra", "gpus", "cpus", "memory", "instance_type",
                     "use_spot", "disk_size", "disk_tier", "ports", "network_tier", "cluster_name",
                     "autodown", "idle_minutes_to_autostop", "retry_until_up", "file_mounts"),
                    ("skypilot",)),
    # dgxcloud (nemo-run DGXCloudExecutor)
    **dict.fromkeys(("base_url", "kube_apiserver_url", "client_id", "client_secret", "project_name",
                     "pvc_nemo_run_dir", "pvcs", "distributed_framework"), ("dgxcloud",)),
    # lepton (nemo-run LeptonExecutor)
    **dict.fromkeys(("resource_shape", "node_group", "node_reservation", "nemo_run_dir",
                     "shared_memory_size", "image_pull_secrets", "secret_vars", "can_be_preempted",
                     "can_preempt", "queue_priority"), ("lepton",)),
    "launched_from_cluster": ("dgxcloud", "lepton"),
    "custom_spec": ("dgxcloud", "lepton"),
}

#: keys a profile of the executor must set (nemo-run's executor has no default for them)
REQUIRED_KEYS: Mapping[str, tuple[str, ...]] = {
    "docker": ("container_image",),
    "dgxcloud": ("container_image", "base_url", "kube_apiserver_url", "client_id", "client_secret",
                 "project_name", "pvc_nemo_run_dir", "pvcs"),
    "lepton": ("container_image", "nemo_run_dir", "resource_shape", "node_group"),
    "skypilot": (),
}


class LeptonMount(BaseModel):
    """One ``mounts`` table of a Lepton profile: nemo-run's ``leptonai`` ``Mount`` fields."""

    model_config = _STRICT

    #: path on the Lepton storage (``from``)
    path: str
    #: where it appears in the container
    mount_path: str
    #: storage the path is on (``node-nfs:NAME``)
    from_: str = Field(alias="from")


class DgxPvc(BaseModel):
    """One ``pvcs`` table of a DGX Cloud profile, as the DGX Cloud workload API takes it."""

    model_config = _STRICT

    claimName: str  # noqa: N815 - the API's spelling
    path: str
    existingPvc: bool = True  # noqa: N815
    readOnly: bool = False  # noqa: N815


def unused_executor_keys(executor: str, values: Mapping[str, Any]) -> list[str]:
    """Keys set in ``values`` (``None`` is unset) that ``executor`` does not read, in table order.

    For ``local`` and ``slurm`` only the keys of the other executors count: a profile
    without ``executor`` runs here, and Slurm keys in it stay as quiet as they always were.
    """
    def counts(users: tuple[str, ...]) -> bool:
        return executor not in LENIENT or set(users).isdisjoint(LENIENT)

    return [k for k, users in EXECUTOR_KEY_USERS.items()
            if values.get(k) is not None and executor not in users and counts(users)]


def ssh_job_dir_problem(host: str | None, user: str | None, identity: str | None) -> str:
    """Why a ``tunnel = "ssh"`` profile without ``remote_job_dir`` (the reference's SSH
    example) is refused, quoting the profile's SSH keys with the one to add. There is no
    default: this machine cannot see the cluster's filesystem to choose a directory
    there, and a wrong guess would surface only at submission (docs/env-toml.md)."""
    keys = {"tunnel": "ssh", "host": host, "user": user, "identity": identity,
            "remote_job_dir": f"/lustre/{user or 'you'}/nemotron-jobs"}
    return ('tunnel = "ssh" requires remote_job_dir, the job directory on the cluster\'s shared filesystem '
            "(there is no default: this machine cannot see that filesystem); the reference's SSH example "
            "needs this one more key: " + ", ".join(f'{k} = "{v}"' for k, v in keys.items() if v))


def executor_problem(executor: str, values: Mapping[str, Any]) -> str | None:
    """The first problem of a merged profile for its executor, as one message starting with the key."""
    for key in unused_executor_keys(executor, values):
        users = EXECUTOR_KEY_USERS[key]
        return (f"{key} = {_shown(values[key])} is not used by executor = \"{executor}\" (read only by executor = "
                f"{' or '.join(repr(u) for u in users)}; remove it or change executor)")
    for key in REQUIRED_KEYS.get(executor, ()):
        if values.get(key) in (None, "", []):
            return f"executor = \"{executor}\" requires {key} ({_REQUIRED_HINT[key]})"
    mounts = values.get("mounts") or []
    tables = [m for m in mounts if not isinstance(m, str)]
    if executor == "lepton" and len(tables) != len(mounts):
        return ('mounts = [...] of executor = "lepton" are tables: mounts = [{ path = "/shared/x", '
                'mount_path = "/x", from = "node-nfs:NAME" }]')
    for i, table in enumerate(tables if executor == "lepton" else ()):
        problem = _mount_table_problem(table)
        if problem:
            return f"mounts = [...] entry {i} {problem}"
    if executor != "lepton" and tables:
        return (f'mounts = [...] of executor = "{executor}" are "src:dst[:flags]" strings (tables are '
                'for executor = "lepton")')
    if executor == "dgxcloud":
        run_dir = str(values.get("pvc_nemo_run_dir"))
        if not any(_within(run_dir, p.path) for p in values.get("pvcs") or []):
            return (f"pvc_nemo_run_dir = {run_dir!r} is on none of the pvcs (add a pvcs table whose "
                    "path holds it)")
    if executor == "lepton" and (values.get("can_be_preempted") or values.get("can_preempt")) \
            and not values.get("queue_priority"):
        key = "can_be_preempted" if values.get("can_be_preempted") else "can_preempt"
        return f"{key} = true requires queue_priority (e.g. queue_priority = \"mid-4000\")"
    if executor == "skypilot" and values.get("infra") and any(values.get(k) for k in ("cloud", "region", "zone")):
        return (f"infra = {values['infra']!r} replaces cloud, region and zone (SkyPilot refuses both): "
                "remove one")
    return None


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str | int | float):
        return repr(value)
    return "[...]" if isinstance(value, list | tuple) else "{...}"


def _mount_table_problem(table: Mapping[str, Any]) -> str | None:
    from nemo_runspec._suggest import did_you_mean

    known = ("path", "mount_path", "from")
    for key in table:
        if key not in known:
            return f"has unknown key {key!r} ({did_you_mean(key, list(known), listing=True)})"
    for key in known:
        if key not in table:
            return f"needs {key} (path = \"/shared/x\", mount_path = \"/x\", from = \"node-nfs:NAME\")"
    return None


def _within(path: str, parent: str) -> bool:
    import os.path

    path, parent = os.path.abspath(path), os.path.abspath(parent)
    return os.path.commonpath([path, parent]) == parent


_REQUIRED_HINT: Mapping[str, str] = {
    "container_image": "the image the job runs in, e.g. container_image = \"nvcr.io/nvidia/nemo:25.11\"",
    "base_url": "the DGX Cloud API, e.g. \"https://dgxc.example.com/api/v1\"",
    "kube_apiserver_url": "the cluster's Kubernetes API server URL",
    "client_id": "${oc.env:DGXC_CLIENT_ID} (the reference's app_id)",
    "client_secret": "${oc.env:DGXC_CLIENT_SECRET} (the reference's app_secret); never the value itself",
    "project_name": "the DGX Cloud project jobs run in",
    "pvc_nemo_run_dir": "the directory on a PVC where job dirs are copied",
    "pvcs": "pvcs = [{ claimName = \"my-pvc\", path = \"/workspace\" }]",
    "nemo_run_dir": "the directory on Lepton storage where job dirs are copied",
    "resource_shape": "e.g. \"gpu.8xh100-80gb\"",
    "node_group": "the Lepton node group jobs run on",
}
