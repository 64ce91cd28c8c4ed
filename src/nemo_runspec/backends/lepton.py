"""``executor = "lepton"``: a Lepton job, through nemo-run's ``LeptonExecutor`` in a
``nemo_run.Experiment``. Its ``mounts`` are tables (Lepton storage), and secrets come from
the workspace's secret store (``secret_vars``): the job dir is copied into a workload's
command line, where a secrets file would not be private."""

from __future__ import annotations

import os.path
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from nemo_runspec.backends.platform import IMAGE_HINT, PlatformBackend, plain, set_fields
from nemo_runspec.env.keys import Key, ProfileKeys
from nemo_runspec.errors import ExecutionError

if TYPE_CHECKING:
    from nemo_run.core.execution.base import Executor

_MOUNT_KEYS = ("path", "mount_path", "from")


def _mount_table_problem(table: Mapping[str, Any]) -> str | None:
    from nemo_runspec._suggest import did_you_mean

    for key in table:
        if key not in _MOUNT_KEYS:
            return f"has unknown key {key!r} ({did_you_mean(key, list(_MOUNT_KEYS), listing=True)})"
    for key in _MOUNT_KEYS:
        if key not in table:
            return f"needs {key} (path = \"/shared/x\", mount_path = \"/x\", from = \"node-nfs:NAME\")"
    return None


def _problem(values: Mapping[str, Any]) -> str | None:
    mounts = values.get("mounts") or []
    tables = [m for m in mounts if not isinstance(m, str)]
    if len(tables) != len(mounts):
        return ('mounts = [...] of executor = "lepton" are tables: mounts = [{ path = "/shared/x", '
                'mount_path = "/x", from = "node-nfs:NAME" }]')
    for i, table in enumerate(tables):
        problem = _mount_table_problem(table)
        if problem:
            return f"mounts = [...] entry {i} {problem}"
    if (values.get("can_be_preempted") or values.get("can_preempt")) and not values.get("queue_priority"):
        key = "can_be_preempted" if values.get("can_be_preempted") else "can_preempt"
        return f"{key} = true requires queue_priority (e.g. queue_priority = \"mid-4000\")"
    return None


class LeptonBackend(PlatformBackend):
    """A Lepton job on a node group."""

    name: ClassVar[str] = "lepton"
    nemo_run_executor: ClassVar[str] = "nemo_run.core.execution.lepton:LeptonExecutor"
    install_hint: ClassVar[str] = 'pip install "leptonai<0.28"'
    #: leptonai's lepton_env_to_pytorch.sh exports these
    rendezvous: ClassVar[tuple[str, str] | None] = ("$MASTER_ADDR", "$NODE_RANK")
    profile: ClassVar[ProfileKeys] = ProfileKeys(
        keys={
            "resource_shape": Key(str),
            "node_group": Key(str),
            "node_reservation": Key(str),
            "nemo_run_dir": Key(str),
            "shared_memory_size": Key(int, ge=1),
            "image_pull_secrets": Key(list[str]),
            "secret_vars": Key(dict[str, str]),
            "can_be_preempted": Key(bool),
            "can_preempt": Key(bool),
            "queue_priority": Key(str),
            "launched_from_cluster": Key(bool),
            "custom_spec": Key(dict[str, Any]),
        },
        required={
            "container_image": IMAGE_HINT,
            "nemo_run_dir": "the directory on Lepton storage where job dirs are copied",
            "resource_shape": "e.g. \"gpu.8xh100-80gb\"",
            "node_group": "the Lepton node group jobs run on",
        },
        mount_tables=True,
        problem=_problem,
    )

    @classmethod
    def executor_fields(cls, values: Mapping[str, Any], *, nodes: int, gpus: int, nproc: int,
                        image: str | None) -> dict[str, object]:
        """``LeptonExecutor``'s fields: the image, nodes and GPUs, the mount tables, Lepton's keys."""
        out: dict[str, object] = {"container_image": image, "nodes": nodes, "gpus_per_node": gpus,
                                  "nprocs_per_node": nproc, "mounts": [plain(m) for m in values.get("mounts") or []]}
        set_fields(out, values, ("nemo_run_dir", "resource_shape", "node_group", "node_reservation",
                                 "shared_memory_size", "image_pull_secrets", "secret_vars", "can_be_preempted",
                                 "can_preempt", "queue_priority", "launched_from_cluster", "custom_spec"))
        return out

    @classmethod
    def deliverable_secrets(cls, secrets: dict[str, str], values: Mapping[str, Any]) -> dict[str, str]:
        """None in a file: Lepton injects each from its secret store, which ``secret_vars`` must name."""
        if not secrets:
            return secrets
        missing = sorted(set(secrets) - set(values.get("secret_vars") or {}))
        if missing:
            raise ExecutionError(
                f"the job needs the secret(s) {', '.join(missing)}, which Lepton jobs take from the "
                "workspace's secret store", key="secret_vars",
                hint=f"store each in Lepton and name it: secret_vars = {{ {missing[0]} = \"<lepton secret name>\" }}")
        return {}

    @classmethod
    def place_job_dir(cls, executor: Executor, relative: str) -> None:
        """The job dir on Lepton storage: ours relative to nemo-run's dir there."""
        executor.lepton_job_dir = os.path.join(executor.nemo_run_dir, relative)
