"""``executor = "skypilot"``: a SkyPilot cluster, through nemo-run's ``SkypilotExecutor`` in a
``nemo_run.Experiment`` (SkyPilot itself is an optional install: a dry run shows the fields
without it, a submission says what to install)."""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import Any, ClassVar

from nemo_runspec.backends.platform import PlatformBackend, set_fields
from nemo_runspec.env.keys import Key, ProfileKeys

_CHOICES = str | list[str]  # SkyPilot takes one value or a list to choose from


def _problem(values: Mapping[str, Any]) -> str | None:
    if values.get("infra") and any(values.get(k) for k in ("cloud", "region", "zone")):
        return (f"infra = {values['infra']!r} replaces cloud, region and zone (SkyPilot refuses both): "
                "remove one")
    return None


class SkypilotBackend(PlatformBackend):
    """A SkyPilot cluster (a cloud's VMs or a Kubernetes cluster)."""

    name: ClassVar[str] = "skypilot"
    nemo_run_executor: ClassVar[str] = "nemo_run.core.execution.skypilot:SkypilotExecutor"
    install_hint: ClassVar[str] = ('pip install "skypilot[kubernetes]" (or the cloud you use), '
                                   "as nemo_run[skypilot] does")
    #: SkyPilot exports the nodes' addresses, head first, and each node's rank
    rendezvous: ClassVar[tuple[str, str] | None] = ('$(echo "$SKYPILOT_NODE_IPS" | head -n1)',
                                                     "$SKYPILOT_NODE_RANK")
    profile: ClassVar[ProfileKeys] = ProfileKeys(
        keys={
            "cloud": Key(_CHOICES),
            "region": Key(_CHOICES),
            "zone": Key(_CHOICES),
            "infra": Key(str),
            "gpus": Key(_CHOICES),
            "cpus": Key(int | float, gt=0),
            "memory": Key(int | float, gt=0),
            "instance_type": Key(_CHOICES),
            "use_spot": Key(bool),
            "disk_size": Key(int, ge=1),
            "disk_tier": Key(str),
            "ports": Key(list[str]),
            "network_tier": Key(str),
            "cluster_name": Key(str),
            "autodown": Key(bool),
            "idle_minutes_to_autostop": Key(int, ge=0),
            "retry_until_up": Key(bool),
            "file_mounts": Key(dict[str, str]),
        },
        problem=_problem,
    )

    @classmethod
    def missing(cls, module: ModuleType) -> str | None:
        """nemo-run's module imports without SkyPilot and says so in a flag."""
        return None if getattr(module, "_SKYPILOT_AVAILABLE", False) else "SkyPilot"

    @classmethod
    def executor_fields(cls, values: Mapping[str, Any], *, nodes: int, gpus: int, nproc: int,
                        image: str | None) -> dict[str, object]:
        """``SkypilotExecutor``'s fields: nodes, processes per node, the image and GPUs, the cloud's keys."""
        out: dict[str, object] = {"num_nodes": nodes, "torchrun_nproc_per_node": nproc}
        if image:
            out["container_image"] = image
        if gpus > 0:
            out["gpus_per_node"] = gpus
        set_fields(out, values, ("cloud", "region", "zone", "infra", "gpus", "cpus", "memory", "instance_type",
                                 "use_spot", "disk_size", "disk_tier", "network_tier", "cluster_name", "autodown",
                                 "idle_minutes_to_autostop", "retry_until_up", "file_mounts"))
        if values.get("ports"):
            out["ports"] = tuple(values["ports"])
        return out
