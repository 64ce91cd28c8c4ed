"""Artifact registry: named, versioned outputs handed from one stage to the next.

A data-prep stage publishes its output as ``nano3-pretrain-data-tiny`` version N;
a training config consumes it with ``${art:data,path}``. Two backends:

- :class:`FsspecBackend` — any fsspec URL (default ``file://$NEMOTRON_HOME/artifacts``);
  see :mod:`nemo_runspec.artifacts.fsspec_backend` for its layout and atomicity.
- :class:`WandbBackend` — W&B artifacts (``wandb`` is imported only when used;
  see :mod:`nemo_runspec.artifacts.wandb_backend`). A job gets it as
  ``$NEMOTRON_ARTIFACTS_ROOT=wandb://ENTITY/PROJECT``.
"""

from __future__ import annotations

import builtins  # the annotations of ArtifactRegistry, whose method `list` hides the builtin
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nemo_runspec._suggest import did_you_mean
from nemo_runspec.artifacts.errors import ArtifactError, ArtifactPublishError
from nemo_runspec.artifacts.fsspec_backend import FsspecBackend
from nemo_runspec.artifacts.refs import (
    ALIAS_RE,
    NAME_RE,
    Artifact,
    Backend,
    parse_ref,
    version_number,
)
from nemo_runspec.artifacts.wandb_backend import WandbBackend

__all__ = [
    "Artifact",
    "ArtifactRegistry",
    "Backend",
    "FsspecBackend",
    "WandbBackend",
    "get_registry",
    "parse_ref",
    "registry_for",
    "registry_from_config",
    "set_registry",
]


def _sweep_point() -> dict[str, Any]:
    """``{"sweep": {"id", "index", "values", "overrides"}}`` when a sweep's point publishes
    (docs/sweeps.md): its swept values and every override, from ``NEMOTRON_SWEEP_*``
    (``NEMOTRON_SWEEP_VALUES`` is the point's ``point.json``); empty otherwise."""
    sweep_id = os.environ.get("NEMOTRON_SWEEP_ID")
    if not sweep_id:
        return {}
    import json

    point: dict[str, Any] = {"id": sweep_id, "index": os.environ.get("NEMOTRON_SWEEP_INDEX")}
    try:
        data = json.loads(os.environ.get("NEMOTRON_SWEEP_VALUES") or "{}")
    except ValueError:
        data = {}
    data = data if isinstance(data, dict) else {}
    if isinstance(data.get("values"), dict):
        point["values"] = data["values"]  # the swept keys' values
    if isinstance(data.get("overrides"), list):
        point["overrides"] = data["overrides"]  # every override of the point
    if str(point["index"] or "").isdigit():
        point["index"] = int(point["index"])
    return {"sweep": point}


class ArtifactRegistry:
    """Publish and resolve named, versioned artifacts.

    >>> reg = ArtifactRegistry("/tmp/registry")                       # doctest: +SKIP
    >>> art = reg.publish("nano3-pretrain-data-tiny", "out/", metadata={"tokens": 1})
    >>> reg.resolve("nano3-pretrain-data-tiny:latest").path
    """

    def __init__(self, root: str | os.PathLike[str] | None = None, *, backend: Backend | None = None) -> None:
        if backend is None and root is not None and str(root).startswith("wandb://"):
            backend = WandbBackend.from_url(str(root))  # $NEMOTRON_ARTIFACTS_ROOT handed to a job
        if backend is None:
            if root is None:
                from nemo_runspec.paths import nemotron_home

                root = str(nemotron_home() / "artifacts")
            backend = FsspecBackend(root)
        self.backend = backend

    @property
    def location(self) -> str:
        """Where the registry lives: its backend's URL, else the backend's class name."""
        return getattr(self.backend, "url", type(self.backend).__name__)

    def publish(self, name: str, path: str | os.PathLike[str] | None, *,
                metadata: Mapping[str, Any] | None = None,
                aliases: Iterable[str] = ("latest",), copy: bool = False) -> Artifact:
        """Register ``path`` as the next version of ``name`` (atomically).

        ``copy=False`` (default) records the path by reference — right for large
        datasets already on shared storage; ``copy=True`` copies the payload
        into the registry first.
        """
        if not NAME_RE.match(name):
            raise ArtifactPublishError(f"invalid artifact name {name!r}",
                                       hint="letters, digits, '.', '_' and '-'")
        _refuse_orphan(name)
        aliases = list(aliases)
        for alias in aliases:  # before anything is written: a bad alias registers nothing
            if not ALIAS_RE.match(alias) or version_number(alias) is not None:
                raise ArtifactPublishError(f"invalid alias {alias!r}", key=name,
                                           hint="aliases start with a letter and are not version numbers")
        src = None if path is None else str(path)
        if src is not None and "://" not in src:
            src = str(Path(src).resolve())
            if not copy and not Path(src).exists():
                raise ArtifactPublishError(f"nothing to publish: {src} does not exist", key=name)
        # a pipeline stage's run says which config and inputs made this version (nemo_runspec.pipeline.chain)
        pipe = {key: os.environ[var] for key, var in (("pipe_key", "NEMOTRON_PIPE_FINGERPRINT"),
                                                       ("pipe_id", "NEMOTRON_PIPE_ID"))
                if os.environ.get(var)}
        extra = _job_records(src)
        return self.backend.publish(name, src, metadata={**(metadata or {}), **pipe, **_sweep_point(), **extra},
                                    aliases=aliases, copy=copy)

    def resolve(self, ref: str) -> Artifact:
        """Resolve ``name[:version|alias]`` (or ``art://name:version``) to an :class:`Artifact`."""
        name, selector = parse_ref(ref)
        return self.backend.get(name, selector)

    def list(self) -> list[str]:
        """Names of all artifacts with at least one version."""
        return self.backend.names()

    def versions(self, name: str) -> builtins.list[Artifact]:
        """All versions of ``name``, oldest first."""
        return self.backend.versions(name)

    def set_alias(self, ref: str, alias: str) -> Artifact:
        """Point ``alias`` at the version ``ref`` resolves to."""
        art = self.resolve(ref)
        self.backend.set_alias(art.name, alias, art.version)
        return self.resolve(f"{art.name}:v{art.version}")

    def gc(self) -> builtins.list[str]:
        """Remove what crashed publishes left behind (see :meth:`FsspecBackend.gc`); other backends: nothing."""
        gc = getattr(self.backend, "gc", None)
        return gc() if callable(gc) else []


#: set in every job a publish can come from: a local run, a pipeline stage, a Slurm job
JOB_MARKERS = ("NEMOTRON_JOB_DIR", "NEMOTRON_PIPE_ID", "SLURM_JOB_ID")


def _job_records(src: str | None) -> dict[str, Any]:
    """What a job's publish records beside the caller's metadata: ``contents`` (what the
    path holds now, so a later run can tell when it was deleted or thinned out) and
    ``inputs`` (the exact versions the job read). A direct call outside a job (a notebook,
    a test) stores its metadata as given."""
    if not any(os.environ.get(var) for var in JOB_MARKERS):
        return {}
    from nemo_runspec.artifacts.contents import summarize
    from nemo_runspec.artifacts.pins import consumed

    extra: dict[str, Any] = {"contents": summary} if src is not None and (summary := summarize(src)) else {}
    if inputs := consumed():
        extra["inputs"] = inputs
    return extra


def _refuse_orphan(name: str) -> None:
    """A local run publishes only while the ``nemotron`` command that started it runs
    (``$NEMOTRON_LAUNCHER``, set by :func:`nemo_runspec.execution.local.execute_local`)
    and has not begun to stop it (``$NEMOTRON_LAUNCH_LEASE``, a file removed the moment
    the job ends or is interrupted): a process left behind by a command that was killed
    or interrupted never publishes."""
    lease = os.environ.get("NEMOTRON_LAUNCH_LEASE")
    if lease and not os.path.exists(lease):
        raise ArtifactPublishError(
            f"not publishing {name}: the nemotron command that started this run has stopped it "
            f"(its lease {lease} is gone), so this process was left behind",
            key=name, hint="run the command again; nothing of this run was published")
    launcher = os.environ.get("NEMOTRON_LAUNCHER")
    if not launcher:
        return
    from nemo_runspec.runtime.procs import identity_running, this_host

    host, _, ident = launcher.rpartition("@")
    if host != this_host():
        return  # recorded elsewhere (an environment carried to another machine): nothing to check here
    if not identity_running(ident):
        raise ArtifactPublishError(
            f"not publishing {name}: the nemotron command that started this run (pid "
            f"{ident.partition(':')[0]}) has ended, so this process was left behind",
            key=name, hint="run the command again; nothing of this run was published")


_REGISTRY: ArtifactRegistry | None = None


def registry_from_config(artifacts: Mapping[str, Any] | None, *,
                         wandb: Mapping[str, Any] | None = None) -> ArtifactRegistry:
    """Build a registry from an env.toml ``[artifacts]`` table (``backend``, ``root``).

    For ``backend = "wandb"`` the entity and project are ``[wandb]``'s (``wandb``),
    and ``root`` is where copied versions are downloaded.
    """
    artifacts = dict(artifacts or {})
    backend = artifacts.get("backend", "file")
    if backend == "wandb":
        wandb = dict(wandb or {})
        return ArtifactRegistry(backend=WandbBackend(
            entity=artifacts.get("entity", wandb.get("entity")),
            project=artifacts.get("project", wandb.get("project")),
            download_root=artifacts.get("root"),
        ))
    if backend not in ("file", "fsspec"):
        raise ArtifactError(f"unknown artifacts backend {backend!r}", key="artifacts.backend",
                            hint=did_you_mean(str(backend), ["file", "fsspec", "wandb"], listing=True))
    root = artifacts.get("root")
    if root and "://" not in str(root):
        root = str(Path(os.path.expanduser(str(root))).resolve())
    return ArtifactRegistry(root)


def registry_for(sections: Mapping[str, Mapping[str, Any]] | None) -> ArtifactRegistry:
    """The registry a command uses: ``$NEMOTRON_ARTIFACTS_ROOT``, else env.toml's
    ``[artifacts]`` (``sections`` as :func:`nemo_runspec.env.read_sections` returns
    them), else ``$NEMOTRON_HOME/artifacts``."""
    root = os.environ.get("NEMOTRON_ARTIFACTS_ROOT")
    if root:
        if "://" not in root:  # a relative root means the same place from any directory of this process
            root = os.path.abspath(os.path.expanduser(root))
        return ArtifactRegistry(root)
    sections = sections or {}
    return registry_from_config(sections.get("artifacts"), wandb=sections.get("wandb"))


def get_registry() -> ArtifactRegistry:
    """The process-wide registry.

    Order: :func:`set_registry`, ``$NEMOTRON_ARTIFACTS_ROOT``, the ``[artifacts]``
    section of the discovered env.toml, ``$NEMOTRON_HOME/artifacts``.
    """
    global _REGISTRY
    if _REGISTRY is None:
        if os.environ.get("NEMOTRON_ARTIFACTS_ROOT"):
            _REGISTRY = registry_for(None)
        else:
            from nemo_runspec.env import find_env_file, load_env_file, read_sections

            path = find_env_file()
            _REGISTRY = registry_for(read_sections(load_env_file(path) if path else None))
    return _REGISTRY


def set_registry(registry: ArtifactRegistry | None) -> None:
    """Install ``registry`` as the process-wide registry (``None`` resets)."""
    global _REGISTRY
    _REGISTRY = registry
