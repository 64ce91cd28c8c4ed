"""One stage of a pipeline: a recipe script, its config, and what it consumes and publishes.

A :class:`Step` is a description; :func:`nemo_runspec.pipeline.chain.compile_pipeline`
turns each into a :class:`~nemo_runspec.job.compiled.CompiledJob` with the usual rules
(config + overrides + env.toml profile) and reads from that job what the stage
consumes (its ``run.<key>`` artifact references, e.g. ``run.data:
nano3-pretrain-data-tiny:latest``) and publishes (``publish.name``). The
dependency graph follows from those names: a step depends on the step of the
same pipeline that publishes an artifact it consumes.

A step may also have a ``prepare`` hook, applied to its compiled job before the
dependency graph is built: it returns a :class:`Preparation` (the job made ready
as its own command would make it, what its dry run shows beyond the job, and
what must be submitted before it, such as container-image imports). The
evaluation stage uses it so that ``nano3 pipe`` and ``nemotron steps run``
evaluate exactly as ``nano3 eval`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from nemo_runspec.job.compiled import CompiledJob
    from nemo_runspec.spec.models import Runspec


@dataclass(frozen=True)
class Preparation:
    """What a step's ``prepare`` hook makes of its compiled job.

    Attributes:
        job: the job to run, show and submit instead of the compiled one.
        show: prints what the dry run shows after the job's own script (e.g. the
            exact evaluation config); called with a rich console.
        before_submit: submits what the stage needs first (e.g. image imports) when
            the stage is submitted to Slurm; returns the job ids the stage waits for
            (``afterok``). Never called for a dry run or a local run.
    """

    job: CompiledJob
    show: Callable[[Console], object] | None = field(default=None, compare=False)
    before_submit: Callable[[], list[str]] | None = field(default=None, compare=False)


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
        prepare: called with the compiled job; returns the :class:`Preparation` the
            pipeline runs, shows and submits (``None``: the compiled job as it is).
        skip_when: called with the compiled job; a reason when the stage has nothing to
            do under this config (e.g. a conversion between formats that already match):
            the stage is skipped whatever ``--no-resume`` says, and the reason shown.
    """

    name: str
    script: Path
    config: str | None = None
    overrides: tuple[str, ...] = ()
    check: Callable[[CompiledJob, Sequence[str]], None] | None = field(default=None, compare=False)
    description: str = ""
    prepare: Callable[[CompiledJob], Preparation] | None = field(default=None, compare=False)
    skip_when: Callable[[CompiledJob], str | None] | None = field(default=None, compare=False)

    @cached_property
    def runspec(self) -> Runspec:
        """The script's parsed ``[tool.runspec]``."""
        from nemo_runspec.spec.parser import parse

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
    from nemo_runspec.artifacts.errors import ArtifactError
    from nemo_runspec.config.resolvers import reference_for, referenced_keys

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
