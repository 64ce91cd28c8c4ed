"""One stage of a pipeline: a recipe script, its config, and what it consumes and publishes.

A :class:`Step` is a description; :func:`nemo_runspec.pipeline.compile_pipeline`
turns each into a :class:`~nemo_runspec.job.CompiledJob` with the usual rules
(config + overrides + env.toml profile) and reads from that job what the stage
consumes (its ``run.<key>`` artifact references, e.g. ``run.data:
nano3-pretrain-data-tiny:latest``) and publishes (``publish.name``). The
dependency graph follows from those names: a step depends on the step of the
same pipeline that publishes an artifact it consumes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nemo_runspec._models import Runspec
    from nemo_runspec.job import CompiledJob



@dataclass(frozen=True)
class Step:
    """A typed description of one stage.

    Attributes:
        name: the stage's name in the pipeline (``pretrain``, ``prep-sft``); also
            the prefix of its command-line overrides (``pretrain.train.train_iters=5``).
        script: the recipe script (its ``[tool.runspec]`` says how it is launched:
            direct, torchrun or ray).
        config: the config name or path in the script's config dir; ``None`` takes
            the pipeline's ``-c`` (or the runspec default).
        overrides: ``key=value`` overrides always applied to this stage.
        check: called with the compiled job and the stage's overrides before anything
            runs (e.g. a schema check); raises a one-line error to stop the pipeline.
        description: one line for listings.
    """

    name: str
    script: Path
    config: str | None = None
    overrides: tuple[str, ...] = ()
    check: Callable[[CompiledJob, Sequence[str]], None] | None = field(default=None, compare=False)
    description: str = ""

    @cached_property
    def runspec(self) -> Runspec:
        """The script's parsed ``[tool.runspec]``."""
        from nemo_runspec import parse

        return parse(self.script)

    @property
    def launch(self) -> str:
        """How the script is started (``direct``, ``torchrun`` or ``ray``)."""
        return self.runspec.run.launch


def consumed_artifacts(job_config: Any) -> dict[str, str]:
    """What a stage consumes: ``{key: reference}`` for every ``${art:<key>,...}`` its
    config uses (``{"data": "nano3-pretrain-data-tiny:latest"}``; a direct
    ``${art:name:alias,...}`` is its own key). A key with no reference is left out:
    the stage's own job reports it when it starts."""
    from nemo_runspec.config.resolvers import reference_for, referenced_keys
    from nemo_runspec.exceptions import ArtifactError

    run = job_config.get("run") or {}
    out: dict[str, str] = {}
    for key in sorted(referenced_keys(job_config)):
        if key in run and run[key] in (None, ""):
            continue
        try:
            out[key] = reference_for(key, job_config)
        except ArtifactError:
            continue
    return out


def published_artifact(job_config: Any) -> str | None:
    """The artifact name the stage publishes (``publish.name``), if any."""
    publish = job_config.get("publish") if hasattr(job_config, "get") else None
    name = publish.get("name") if publish is not None and hasattr(publish, "get") else None
    return str(name) if name else None


def artifact_name(ref: str) -> str:
    """``name`` of ``name[:version|alias]`` (or ``art://name:...``)."""
    ref = ref.removeprefix("art://")
    return ref.split(":", 1)[0]
