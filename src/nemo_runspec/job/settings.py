"""Reading the merged execution settings of a job (``run.env``, or a profile's values).

Small pure functions shared by the executor builder, local runs and the Slurm
layer: which launch, which image, which partition, how many nodes and GPUs.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nemo_runspec.env.profile import profile_values  # noqa: F401 - read here by its callers
from nemo_runspec.script_values import DISABLED_IMAGES  # "no container: run bare metal"

if TYPE_CHECKING:
    from nemo_runspec.config.tree import ConfigTree
    from nemo_runspec.spec.models import Runspec


def lookup(obj: Any, *path: str, default: Any = None) -> Any:
    """``obj[path[0]][path[1]]...`` through mappings, DictConfigs or attributes; ``default`` if absent."""
    for part in path:
        if obj is None:
            return default
        if isinstance(obj, Mapping):
            obj = obj.get(part)
        else:
            try:
                obj = obj[part]
            except Exception:
                obj = getattr(obj, part, None)
    return default if obj is None else obj


def job_env(job_config: ConfigTree | None) -> dict[str, Any]:
    """The merged execution settings (``run.env``) of a job config as a plain dict.

    It already applies the precedence runspec < recipe YAML ``run.env`` < env.toml
    profile < CLI ``run.env.KEY=...``. ``${oc.env:...}`` was resolved when it was
    built, and the job config holds the rest OmegaConf-escaped (shell ``${VAR}``
    stays for the shell: :mod:`nemo_runspec.dollar`), so resolving gives the text.
    """
    from omegaconf import DictConfig, OmegaConf

    run_env = lookup(job_config, "run", "env", default={})
    if isinstance(run_env, DictConfig):
        return OmegaConf.to_container(run_env, resolve=True)  # type: ignore[return-value]
    return dict(run_env or {})


def job_slug(name: str) -> str:
    """Slug a recipe name for job names: ``nano3/pretrain`` -> ``nano3-pretrain``."""
    slug = re.sub(r"[^A-Za-z0-9.-]+", "-", name).strip("-.").lower()
    return slug or "job"


def launch_of(runspec: Runspec | None) -> str:
    """The runspec's launch method: ``torchrun``, ``ray`` or ``direct`` (``python`` is ``direct``;
    no runspec is ``direct``)."""
    launch = (runspec.run.launch if runspec is not None else None) or "direct"
    return "direct" if launch == "python" else launch


def container_image(values: Mapping[str, object], runspec: Runspec | None) -> str | None:
    """The job's image: the profile's ``container_image`` (a disabled value means none),
    else the runspec's ``image``."""
    if "container_image" in values:
        image = values["container_image"]
        if image is None or str(image).strip().lower() in DISABLED_IMAGES:
            return None
        return str(image)
    return (runspec.image if runspec is not None else None) or None


def container_choice(values: Mapping[str, Any], source: str | None = None, *, compiled: bool = False) -> str | None:
    """What a job of this profile runs in, in words: its image and where that came from, or
    bare metal. ``values`` is the profile (``container_image`` absent: each recipe's own
    image) or, with ``compiled``, a compiled job's ``run.env`` (whose ``source`` of
    ``container_image`` says ``runspec ...`` when the recipe's image filled it in, and which
    has none when neither names one). None for executors that run no image or need one (their
    backend's ``bare_metal``)."""
    from nemo_runspec.env.registry import DEFAULT_EXECUTOR, backend_class

    if not backend_class(str(values.get("executor") or DEFAULT_EXECUTOR)).bare_metal:
        return None
    if "container_image" not in values:
        if compiled:
            return "bare metal: neither the profile (container_image) nor the recipe (image) names an image"
        return ("each recipe's own image (its runspec `image`): the profile sets no container_image "
                '(container_image = "" runs bare metal)')
    image = values.get("container_image")
    if image is None or str(image).strip().lower() in DISABLED_IMAGES:
        where = f" at {source}" if source else " in the profile"
        return (f"bare metal (container_image = \"{image or ''}\"{where}): the cluster's own Python "
                "environment, no container")
    if source and source.startswith("runspec"):
        return (f"{image} (the recipe's image: the profile sets no container_image; "
                'container_image = "" runs bare metal)')
    return f"{image} (container_image{f' at {source}' if source else ' in the profile'})"


def resolve_resources(values: Mapping[str, Any], runspec: Runspec | None) -> tuple[int, int]:
    """``(nodes, gpus_per_node)``: profile value, else runspec resources, else (1, 0).

    A runspec that asks for every GPU of the node (``gpus_per_node = "gpu"``) needs
    the profile to say how many that is; without it this is a one-line error.
    """
    res = runspec.resources if runspec is not None else None
    nodes = values.get("nodes", res.nodes if res is not None else 1)
    gpus = values.get("gpus_per_node", res.gpus_per_node if res is not None else 0)
    if gpus is None and res is not None and res.gpus_per_node is None:
        from nemo_runspec.errors import ConfigError

        raise ConfigError('the recipe asks for every GPU of a node (resources.gpus_per_node = "gpu") '
                          "but the profile does not say how many a node has", key="gpus_per_node",
                          hint="set gpus_per_node in the env.toml profile (or run.env.gpus_per_node=N)")
    return int(nodes), int(gpus or 0)


def bare_metal_python() -> str:
    """Interpreter a job uses without a container: the submitting one.

    Bare-metal jobs run in the environment that submitted them (a shared
    filesystem, or this machine's own Slurm cluster), so the nodes use the same
    venv. Its ``bin`` dir is also put first on the job's ``PATH`` (for
    ``torchrun`` and ``ray``); see :func:`bare_metal_env`.
    """
    return sys.executable


def bare_metal_env(env_vars: Mapping[str, str]) -> dict[str, str]:
    """``env_vars`` plus ``PATH`` led by the submitting venv's ``bin`` (unless set)."""
    out = dict(env_vars)
    if "PATH" not in out:
        out["PATH"] = f"{os.path.dirname(bare_metal_python())}:$PATH"
    return out
