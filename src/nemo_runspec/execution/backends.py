"""Profile keys -> nemo-run's Docker, SkyPilot, DGX Cloud and Lepton executors (nemo-run 0.11.1).

One function per executor; :func:`executor_fields` is the whole mapping (the
keyword arguments the executor class is built with), so the dry run shows
exactly what the executor holds and tests check every field against the real
dataclass. Which key each executor reads: :mod:`nemo_runspec.env.executor_keys`;
the table: docs/env-toml.md.

Every job starts the same way: ``bash /nemo_run/nemotron-job.sh`` (written by
:mod:`nemo_runspec.execution.backend_job` into the job dir, which each executor
puts at ``/nemo_run``), so nothing the user wrote is pasted into a command line
that nemo-run builds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nemo_runspec.env.registry import BUILTIN
from nemo_runspec.errors import ExecutionError

if TYPE_CHECKING:
    from nemo_run.core.execution.base import Executor
    from nemo_run.core.packaging.base import Packager

#: the executor class of each executor name (module, class)
CLASSES: Mapping[str, tuple[str, str]] = {
    "docker": ("nemo_run.core.execution.docker", "DockerExecutor"),
    "skypilot": ("nemo_run.core.execution.skypilot", "SkypilotExecutor"),
    "dgxcloud": ("nemo_run.core.execution.dgxcloud", "DGXCloudExecutor"),
    "lepton": ("nemo_run.core.execution.lepton", "LeptonExecutor"),
}


def _set(out: dict[str, Any], values: Mapping[str, Any], key: str, field: str | None = None) -> None:
    if values.get(key) is not None:
        value = values[key]
        out[field or key] = list(value) if isinstance(value, list | tuple) else (
            dict(value) if isinstance(value, Mapping) else value)


def executor_fields(kind: str, values: Mapping[str, Any], *, nodes: int, gpus: int, nproc: int,
                    image: str | None, env_vars: Mapping[str, str]) -> dict[str, Any]:
    """The keyword arguments of ``kind``'s nemo-run executor for the merged profile ``values``.

    ``nodes``/``gpus``/``image`` are the resolved resources and image (profile over
    runspec), ``nproc`` the processes per node, ``env_vars`` the plain environment.
    """
    out: dict[str, Any] = {"env_vars": dict(env_vars)}
    if kind == "docker":
        out.update(container_image=image, ntasks_per_node=nproc, volumes=list(values.get("mounts") or []))
        # GPUs only when the profile asks (num_gpus, -1 = all): the runspec's default of
        # 8 GPUs per node would make the engine refuse the container on a machine without them
        num_gpus = values.get("num_gpus")
        if num_gpus:
            out["num_gpus"] = int(num_gpus)
        for key in ("runtime", "ipc_mode", "shm_size", "ulimits", "privileged", "network"):
            _set(out, values, key)
        out["retries"] = int(values.get("retries") or 0)
    elif kind == "skypilot":
        out.update(num_nodes=nodes, torchrun_nproc_per_node=nproc)
        if image:
            out["container_image"] = image
        if gpus > 0:
            out["gpus_per_node"] = gpus
        for key in ("cloud", "region", "zone", "infra", "gpus", "cpus", "memory", "instance_type",
                    "use_spot", "disk_size", "disk_tier", "network_tier", "cluster_name", "autodown",
                    "idle_minutes_to_autostop", "retry_until_up", "file_mounts"):
            _set(out, values, key)
        if values.get("ports"):
            out["ports"] = tuple(values["ports"])
    elif kind == "dgxcloud":
        out.update(container_image=image, nodes=nodes, gpus_per_node=gpus, nprocs_per_node=nproc,
                   pvcs=[_plain(p) for p in values.get("pvcs") or []])
        for key in ("base_url", "kube_apiserver_url", "client_id", "client_secret", "project_name",
                    "pvc_nemo_run_dir", "distributed_framework", "launched_from_cluster", "custom_spec"):
            _set(out, values, key)
    elif kind == "lepton":
        out.update(container_image=image, nodes=nodes, gpus_per_node=gpus, nprocs_per_node=nproc,
                   mounts=[_plain(m) for m in values.get("mounts") or []])
        for key in ("nemo_run_dir", "resource_shape", "node_group", "node_reservation",
                    "shared_memory_size", "image_pull_secrets", "secret_vars", "can_be_preempted",
                    "can_preempt", "queue_priority", "launched_from_cluster", "custom_spec"):
            _set(out, values, key)
    else:
        raise ExecutionError(f"unknown executor {kind!r}", key="executor",
                             hint=", ".join(BUILTIN))
    return out


def _plain(value: Any) -> dict[str, Any]:
    """A validated table (pydantic model or dict) as the plain dict nemo-run passes on."""
    if hasattr(value, "model_dump"):
        return value.model_dump(by_alias=True, exclude_none=True)
    return dict(value)


def executor_class(kind: str) -> type:
    """nemo-run's executor class for ``kind``; a missing optional dependency is one line saying
    what to install (SkyPilot: ``pip install "nemo_run[skypilot]"``)."""
    import importlib

    from nemo_runspec._nemo_run import lean

    lean()
    module, name = CLASSES[kind]
    try:
        cls = getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise ExecutionError(f"executor = {kind!r} needs a package that is not installed: {exc}",
                             key="executor", hint=_INSTALL.get(kind, "install nemo_run's extra for it")) from None
    if kind == "skypilot" and not getattr(importlib.import_module(module), "_SKYPILOT_AVAILABLE", False):
        raise ExecutionError("executor = 'skypilot' needs SkyPilot, which is not installed",
                             key="executor", hint=_INSTALL["skypilot"])
    return cls


_INSTALL = {"skypilot": 'pip install "skypilot[kubernetes]" (or the cloud you use), as nemo_run[skypilot] does',
            "lepton": 'pip install "leptonai<0.28"', "docker": "pip install docker"}


def build_executor(kind: str, fields: Mapping[str, Any], *, packager: Packager | None) -> Executor:
    """Construct ``kind``'s nemo-run executor from :func:`executor_fields` and ``packager``."""
    cls = executor_class(kind)
    try:
        return cls(**fields, packager=packager)
    except (AssertionError, TypeError, ValueError) as exc:
        raise ExecutionError(f"nemo-run's {cls.__name__} refused the profile: {exc}", key="executor") from None
