"""``executor = "dgxcloud"``: a DGX Cloud training workload, through nemo-run's
``DGXCloudExecutor`` in a ``nemo_run.Experiment``. The job dir is copied onto a PVC by a
workload whose command line carries it, so a secrets file would not be private there: a job
with secrets is refused, saying what to do."""

from __future__ import annotations

import functools
import os.path
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from nemo_runspec.backends.platform import IMAGE_HINT, PlatformBackend, plain, set_fields
from nemo_runspec.env.keys import Key, ProfileKeys
from nemo_runspec.errors import ExecutionError

if TYPE_CHECKING:
    from nemo_run.core.execution.base import Executor


@functools.cache
def pvc_model() -> type:
    """One ``pvcs`` table, as the DGX Cloud workload API takes it (a pydantic model, built when
    the profile model is: importing this backend does not import pydantic)."""
    from pydantic import BaseModel, ConfigDict

    class DgxPvc(BaseModel):
        """One ``pvcs`` table of a DGX Cloud profile."""

        model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)

        claimName: str  # noqa: N815 - the API's spelling
        path: str
        existingPvc: bool = True  # noqa: N815
        readOnly: bool = False  # noqa: N815

    return DgxPvc


def _pvcs() -> object:
    return list[pvc_model()]  # type: ignore[misc]


def _within(path: str, parent: str) -> bool:
    path, parent = os.path.abspath(path), os.path.abspath(parent)
    return os.path.commonpath([path, parent]) == parent


def _problem(values: Mapping[str, Any]) -> str | None:
    run_dir = str(values.get("pvc_nemo_run_dir"))
    if not any(_within(run_dir, p.path) for p in values.get("pvcs") or []):
        return f"pvc_nemo_run_dir = {run_dir!r} is on none of the pvcs (add a pvcs table whose path holds it)"
    return None


class DgxCloudBackend(PlatformBackend):
    """A DGX Cloud training workload (Kubeflow's PyTorchJob)."""

    name: ClassVar[str] = "dgxcloud"
    nemo_run_executor: ClassVar[str] = "nemo_run.core.execution.dgxcloud:DGXCloudExecutor"
    #: the PyTorchJob's rendezvous variables
    rendezvous: ClassVar[tuple[str, str] | None] = ("$MASTER_ADDR", "$RANK")
    profile: ClassVar[ProfileKeys] = ProfileKeys(
        keys={
            "base_url": Key(str),
            "kube_apiserver_url": Key(str),
            "client_id": Key(str),
            "client_secret": Key(str),
            "project_name": Key(str),
            "pvc_nemo_run_dir": Key(str),
            "pvcs": Key(build=_pvcs),
            "distributed_framework": Key(str),
            "launched_from_cluster": Key(bool),
            "custom_spec": Key(dict[str, Any]),
        },
        required={
            "container_image": IMAGE_HINT,
            "base_url": "the DGX Cloud API, e.g. \"https://dgxc.example.com/api/v1\"",
            "kube_apiserver_url": "the cluster's Kubernetes API server URL",
            "client_id": "${oc.env:DGXC_CLIENT_ID} (the reference's app_id)",
            "client_secret": "${oc.env:DGXC_CLIENT_SECRET} (the reference's app_secret); never the value itself",
            "project_name": "the DGX Cloud project jobs run in",
            "pvc_nemo_run_dir": "the directory on a PVC where job dirs are copied",
            "pvcs": "pvcs = [{ claimName = \"my-pvc\", path = \"/workspace\" }]",
        },
        problem=_problem,
    )

    @classmethod
    def executor_fields(cls, values: Mapping[str, Any], *, nodes: int, gpus: int, nproc: int,
                        image: str | None) -> dict[str, object]:
        """``DGXCloudExecutor``'s fields: the image, nodes and GPUs, the PVCs, the API's keys."""
        out: dict[str, object] = {"container_image": image, "nodes": nodes, "gpus_per_node": gpus,
                                  "nprocs_per_node": nproc, "pvcs": [plain(p) for p in values.get("pvcs") or []]}
        set_fields(out, values, ("base_url", "kube_apiserver_url", "client_id", "client_secret", "project_name",
                                 "pvc_nemo_run_dir", "distributed_framework", "launched_from_cluster", "custom_spec"))
        return out

    @classmethod
    def deliverable_secrets(cls, secrets: dict[str, str], values: Mapping[str, Any]) -> dict[str, str]:
        """None: the data mover would copy them into a workload's command line or request."""
        if not secrets:
            return secrets
        raise ExecutionError(
            f"the job needs the secret(s) {', '.join(sorted(secrets))}; executor = 'dgxcloud' would copy them "
            "into a workload's command line (its data mover) or request", key="env_vars",
            hint="provide them inside the image or on the PVC yourself, or use a Docker, SkyPilot, Lepton or "
                 "Slurm profile")

    @classmethod
    def place_job_dir(cls, executor: Executor, relative: str) -> None:
        """The job dir on the PVC: ours relative to nemo-run's dir there."""
        executor.pvc_job_dir = os.path.join(executor.pvc_nemo_run_dir, relative)
