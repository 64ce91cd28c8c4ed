"""``executor = "docker"``: one container on this machine's engine, through nemo-run's
``DockerExecutor`` and its own Docker scheduler objects
(:mod:`nemo_runspec.execution.docker_job`: ``--batch`` returns with the container name,
``--run`` follows its log and exits with the script's exit code)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from nemo_runspec.backends.platform import IMAGE_HINT, PlatformBackend, set_fields
from nemo_runspec.env.keys import Key, ProfileKeys

if TYPE_CHECKING:
    from nemo_runspec.execution.backend_job import BackendJob
    from nemo_runspec.job.compiled import CompiledJob


def _size(value: str) -> str:
    if not re.fullmatch(r"[0-9]+[bkmgBKMG]?", value):
        raise ValueError(f"{value!r} is not a size (a number with an optional b, k, m or g: \"16g\")")
    return value


def _ulimits(value: list[str]) -> list[str]:
    for i, item in enumerate(value):
        if not re.fullmatch(r"[a-z_]+:-?[0-9]+(:-?[0-9]+)?", item):
            raise ValueError(f"entry {i} {item!r} must look like NAME:SOFT or NAME:SOFT:HARD "
                             "(\"nofile:65536:65536\", as nemo-run reads it)")
    return value


class DockerBackend(PlatformBackend):
    """One container on this machine's engine (the job dir mounted at ``/nemo_run``)."""

    name: ClassVar[str] = "docker"
    nemo_run_executor: ClassVar[str] = "nemo_run.core.execution.docker:DockerExecutor"
    install_hint: ClassVar[str] = "pip install docker"
    profile: ClassVar[ProfileKeys] = ProfileKeys(
        keys={
            "runtime": Key(str),
            "ipc_mode": Key(str),
            "shm_size": Key(str, check=_size),
            "ulimits": Key(list[str], check=_ulimits),
            "privileged": Key(bool),
            "network": Key(str),
            "num_gpus": Key(int, ge=-1),
        },
        reads=("retries",),
        required={"container_image": IMAGE_HINT},
    )

    @classmethod
    def shares_filesystem(cls, values: Mapping[str, Any]) -> bool:
        """The container runs on this machine."""
        return True

    @classmethod
    def nodes_problem(cls, nodes: int) -> tuple[str, str] | None:
        """One container: more than one node is refused."""
        if nodes > 1:
            return (f"executor = 'docker' runs one container on this machine; nodes = {nodes}",
                    "set nodes = 1, or use a Slurm, SkyPilot, DGX Cloud or Lepton profile")
        return None

    @classmethod
    def executor_fields(cls, values: Mapping[str, Any], *, nodes: int, gpus: int, nproc: int,
                        image: str | None) -> dict[str, object]:
        """``DockerExecutor``'s fields: the image, the mounts as volumes, the engine's options."""
        out: dict[str, object] = {"container_image": image, "ntasks_per_node": nproc,
                                  "volumes": list(values.get("mounts") or [])}
        # GPUs only when the profile asks (num_gpus, -1 = all): the runspec's default of
        # 8 GPUs per node would make the engine refuse the container on a machine without them
        num_gpus = values.get("num_gpus")
        if num_gpus:
            out["num_gpus"] = int(num_gpus)
        set_fields(out, values, ("runtime", "ipc_mode", "shm_size", "ulimits", "privileged", "network"))
        out["retries"] = int(values.get("retries") or 0)
        return out

    def submit(self, job: CompiledJob, prepared: BackendJob) -> int:
        """Start the container through nemo-run's Docker scheduler objects (``--run`` follows it)."""
        from nemo_runspec.execution.docker_job import submit_docker

        return submit_docker(prepared)
