"""OmegaConf resolvers: ``${art:KEY,FIELD}`` artifact references.

A training config names its inputs under ``run`` and uses them anywhere::

    run:
      data: nano3-pretrain-data-tiny:latest
    data:
      data_path: ${art:data,path}                 # payload location
      blend: ${art:data,path}/blend.json
      tokens: ${art:data,metadata.total_tokens}

``KEY`` is a key of the ``run`` section holding a reference
``name[:version|alias]``; a literal reference works too
(``${art:nano3-pretrain-data-tiny:v2,path}``). ``FIELD`` is ``path`` (default),
``version``, ``name``, ``ref`` or ``metadata.<dotted key>``.

Multi-rank jobs resolve once: :func:`resolve_artifacts_once` lets rank 0 look
every reference up and write the answers atomically into the shared job dir;
the other ranks read that file (and fail fast if rank 0 wrote a failure).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nemo_runspec.artifacts.errors import ArtifactError
from nemo_runspec.runtime.ranks import global_rank

if TYPE_CHECKING:
    from nemo_runspec.artifacts.registry import ArtifactRegistry
    from nemo_runspec.config.tree import ConfigTree

_HANDOFF = "artifacts.resolved.json"
_FAILED = "artifacts.failed.json"

# Pinned answers (ref -> artifact dict) used instead of the registry when set.
_PINNED: dict[str, dict[str, Any]] | None = None


def _field(art: Mapping[str, Any], field: str) -> Any:
    if field in ("", "path"):
        return art["path"]
    if field in ("version", "name", "ref"):
        return art[field]
    if field.startswith("metadata."):
        cur: object = art.get("metadata", {})
        for part in field.split(".")[1:]:
            if not isinstance(cur, Mapping) or part not in cur:
                raise ArtifactError(f"artifact {art['ref']} has no {field}",
                                    key=field, hint="available: " + ", ".join(art.get("metadata", {})))
            cur = cur[part]
        return cur
    metadata = art.get("metadata") or {}
    if field in metadata:  # ${art:data,pack_size}: the reference's bare metadata key
        return metadata[field]
    raise ArtifactError(f"unknown artifact field {field!r}", key=field,
                        hint="use path, version, name, ref or metadata.<key>; metadata here: "
                             + (", ".join(sorted(metadata)) or "none"))


def reference_for(key: str, root: object) -> str:
    """The artifact reference ``${art:key,...}`` points at, given the config root."""
    run = None
    try:
        run = root.get("run") if isinstance(root, Mapping) else None
    except Exception:  # noqa: BLE001 - a root whose run section does not read
        run = None
    if isinstance(run, Mapping) and key in run:
        value = run[key]
        if isinstance(value, Mapping):
            value = value.get("ref") or value.get("artifact")
        return str(value)
    if ":" in key or "-" in key:
        return key
    raise ArtifactError(
        f"${{art:{key},...}} has no reference: run.{key} is not set",
        key=f"run.{key}",
        hint=f"add run.{key}: <artifact-name>:latest to the config, or override with +run.{key}=NAME:latest",
    )


def lookup(ref: str) -> dict[str, Any]:
    """Resolve ``ref`` through pinned answers or the process-wide registry, honouring the
    pipeline's pins (``$NEMOTRON_ARTIFACT_PINS``: :mod:`nemo_runspec.artifacts.pins`)."""
    if _PINNED is not None and ref in _PINNED:
        return _PINNED[ref]
    from nemo_runspec.artifacts import pins
    from nemo_runspec.artifacts.registry import get_registry

    return pins.resolve(get_registry(), ref).to_dict()


def _art_resolver(key: str, field: str = "path", *, _root_: object = None) -> Any:
    return _field(lookup(reference_for(str(key), _root_)), str(field))


def register_resolvers(replace: bool = True) -> None:
    """Register ``art`` and ``auto_mount`` with OmegaConf (idempotent)."""
    from omegaconf import OmegaConf

    if OmegaConf.has_resolver("art") and not replace:
        return
    OmegaConf.register_resolver("art", _art_resolver, replace=True, use_cache=False,
                                annotation_validation="off")
    # ${auto_mount:git+URL@REF,/target} in run.env.mounts (the reference's recipes):
    # checked and kept as a mounts entry that env.reference turns into git_mounts
    from nemo_runspec.env.git_mounts import resolver as auto_mount

    OmegaConf.register_resolver("auto_mount", auto_mount, replace=True, use_cache=False,
                                annotation_validation="off")


def pin(answers: Mapping[str, Mapping[str, Any]] | None) -> None:
    """Use ``answers`` (ref -> artifact dict) instead of the registry (``None`` unpins)."""
    global _PINNED
    _PINNED = None if answers is None else {k: dict(v) for k, v in answers.items()}


def referenced_keys(cfg: ConfigTree | str) -> list[str]:
    """The keys of every ``${art:<key>,...}`` interpolation in ``cfg`` (a config or its
    YAML text), in order of first use: ``run.<key>`` names, or direct references."""
    import re

    from omegaconf import OmegaConf

    text = OmegaConf.to_yaml(cfg, resolve=False) if not isinstance(cfg, str) else cfg
    return list(dict.fromkeys(m.group(1).strip() for m in re.finditer(r"\$\{art:([^,}]+)", text)))


def collect_references(cfg: ConfigTree | str) -> list[str]:
    """Every artifact reference used by an ``${art:...}`` interpolation in ``cfg``."""
    root = cfg if not isinstance(cfg, str) else None
    refs = []
    for key in referenced_keys(cfg):
        ref = reference_for(key, root)
        if ref not in refs:
            refs.append(ref)
    return refs


def resolve_artifacts_once(cfg: ConfigTree | str, handoff_dir: str | os.PathLike[str], *, rank: int | None = None,
                           timeout: float = 600.0, poll: float = 0.2,
                           resolver: Callable[[str], dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Resolve the config's artifact references on one rank and share the answers.

    Rank 0 resolves every reference and writes ``artifacts.resolved.json``
    atomically into ``handoff_dir`` (or ``artifacts.failed.json`` with the
    error, then re-raises). Other ranks wait for either file: the answers are
    pinned for the ``art`` resolver; a failure file raises at once instead of
    waiting out ``timeout``.
    """
    rank = global_rank() if rank is None else rank
    handoff = Path(handoff_dir)
    done, failed = handoff / _HANDOFF, handoff / _FAILED
    resolve = resolver or lookup
    if rank == 0:
        handoff.mkdir(parents=True, exist_ok=True)
        try:
            answers = {ref: resolve(ref) for ref in collect_references(cfg)}
        except Exception as exc:
            _write_atomic(failed, {"error": str(exc), "type": type(exc).__name__})
            raise
        _write_atomic(done, answers)
        pin(answers)
        return answers
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if failed.exists():
            err = json.loads(failed.read_text())
            raise ArtifactError(f"rank 0 failed to resolve artifacts: {err['error']}",
                                path=str(failed))
        if done.exists():
            answers = json.loads(done.read_text())
            pin(answers)
            return answers
        time.sleep(poll)
    raise ArtifactError(f"timed out after {timeout:.0f}s waiting for rank 0 to resolve artifacts",
                        path=str(done), hint="check rank 0's log")


def _write_atomic(path: Path, data: object) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    os.replace(tmp, path)


def describe_references(cfg: ConfigTree | str, registry: ArtifactRegistry | None = None) -> list[dict[str, Any]]:
    """Each artifact reference in ``cfg`` with what it resolves to now (for dry runs).

    Returns ``{"ref", "path", "version"}`` or ``{"ref", "error"}`` per reference.
    File/fsspec registries are read (local and cheap); a W&B registry is not
    contacted (``note`` says it resolves on the cluster). ``registry`` defaults
    to the process-wide one.
    """
    from nemo_runspec.artifacts.registry import FsspecBackend, get_registry

    try:
        refs = collect_references(cfg)
    except ArtifactError as exc:
        return [{"ref": "?", "error": str(exc)}]
    registry = registry or get_registry()
    out: list[dict[str, Any]] = []
    for ref in refs:
        if not isinstance(registry.backend, FsspecBackend):
            out.append({"ref": ref, "note": "W&B artifact: resolved on the cluster"})
            continue
        try:
            art = registry.resolve(ref)
        except ArtifactError as exc:
            where = f"{exc.path}: " if exc.path else ""
            out.append({"ref": ref, "error": where + exc.problem + (f" ({exc.hint})" if exc.hint else ""),
                        "problem": where + exc.problem, "hint": exc.hint})
        else:
            out.append({"ref": ref, "path": art.path, "version": art.version, "location": registry.location})
    return out


def registry_reachable(registry: ArtifactRegistry | None, *, job_shares_this_machine: bool = True) -> bool:
    """True when ``registry``'s references can be checked from this machine before a job starts.

    - A local path, when the job runs here or on a cluster that shares this machine's
      filesystem (``job_shares_this_machine``: no profile, ``executor = "local"``, a
      ``tunnel = "local"`` Slurm login node): always, a root nothing was published to
      yet included (it holds no artifact, so every reference is missing).
    - A local path a job submitted over SSH reads on the cluster: when its root, or
      for a registry nothing was published to yet its parent dir, exists here (the
      cluster's filesystem mounted on this machine). ``/lustre/...`` not mounted here
      is not.
    - Any other fsspec store (``s3://...``): when it answers from here.

    A W&B registry is not contacted before submission: False.
    """
    from nemo_runspec.artifacts.registry import FsspecBackend

    backend = registry.backend if registry is not None else None
    if not isinstance(backend, FsspecBackend):
        return False
    root = str(backend.root)
    try:
        if backend.fs.exists(root):
            return True
        protocols = backend.fs.protocol if isinstance(backend.fs.protocol, tuple) else (backend.fs.protocol,)
        if not {"file", "local"} & set(protocols):
            return True  # the store answered: nothing published there yet
        if job_shares_this_machine:
            return True
        parent = root.rstrip("/").rsplit("/", 1)[0] or "/"
        return backend.fs.exists(parent)
    except Exception:  # noqa: BLE001 - a store that does not answer from here is left to the job
        return False


_NOTED: set[str] = set()


def check_references(cfg: ConfigTree | str, registry: ArtifactRegistry | None, *, job_shares_this_machine: bool = True) -> None:
    """Raise a one-line :class:`~nemo_runspec.errors.ConfigError` for the first
    ``${art:...}`` in ``cfg`` that does not resolve, before anything runs or is
    submitted. A registry this machine cannot read (:func:`registry_reachable`) is
    left to the job, which resolves references when it starts; one ``note:`` line
    on stderr says so (once per registry in a process)."""
    import sys

    from nemo_runspec.errors import ConfigError

    rows = describe_references(cfg, registry=registry)
    reachable = registry_reachable(registry, job_shares_this_machine=job_shares_this_machine)
    for row in rows:
        if "error" in row and (row.get("ref") == "?" or reachable):
            users = _keys_using(cfg, row["ref"])
            used = f" (used by {', '.join(users)})" if users else ""
            without = (f"; to run without it, set {users[0]}=null" if len(users) == 1 else "")
            raise ConfigError(
                f"${{art:...}} reference {row['ref']}{used} does not resolve: "
                f"{row.get('problem') or row['error']}",
                hint=(row.get("hint") or "publish it first, or point the config at an existing "
                                         "artifact with +run.KEY=NAME:VERSION") + without,
            )
    location = registry.location if registry is not None else ""
    if rows and not reachable and location not in _NOTED:
        _NOTED.add(location)
        refs = ", ".join(row["ref"] for row in rows)
        print(f"note: artifact registry {location} cannot be read from this machine; the job resolves "
              f"{refs} when it starts", file=sys.stderr)


def _keys_using(cfg: object, ref: str) -> list[str]:
    """Dotted config keys whose value interpolates ``${art:...}`` of ``ref`` (as written)."""
    import re

    from omegaconf import DictConfig, ListConfig

    if not isinstance(cfg, DictConfig | ListConfig):
        return []
    found: list[str] = []

    def walk(node: DictConfig | ListConfig, path: str) -> None:
        items = node.items_ex(resolve=False) if isinstance(node, DictConfig) else enumerate(node._iter_ex(resolve=False))
        for k, v in items:
            here = f"{path}.{k}" if path else str(k)
            if isinstance(v, DictConfig | ListConfig):
                walk(v, here)
            elif isinstance(v, str):
                for m in re.finditer(r"\$\{art:([^,}]+)", v):
                    if reference_for(m.group(1).strip(), cfg) == ref and not here.startswith("run."):
                        found.append(here)
    try:
        walk(cfg, "")
    except Exception:  # noqa: BLE001 - only a better message is lost
        return []
    return list(dict.fromkeys(found))
