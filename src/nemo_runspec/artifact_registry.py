"""Artifact registry: named, versioned outputs handed from one stage to the next.

A data-prep stage publishes its output as ``nano3-pretrain-data-tiny`` version N;
a training config consumes it with ``${art:data,path}``. Two backends:

- :class:`FsspecBackend` — any fsspec URL (default ``file://$NEMOTRON_HOME/artifacts``).
- :class:`WandbBackend` — W&B artifacts (``wandb`` is imported only when used).

Layout of the fsspec backend::

    <root>/<name>/v<N>/...        payload (when published with copy=True)
    <root>/<name>/v<N>.json       the version record: the commit point
    <root>/<name>/aliases.json    {"latest": N, ...}

Publishing is atomic: the payload is copied into a hidden staging directory,
moved into place, and only then is the version record written (exclusively, so
two concurrent publishers never get the same number). A crash at any point
leaves no half version: without its record a version does not exist, and
staging leftovers are ignored (and removed by :meth:`ArtifactRegistry.gc`).
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from nemo_runspec._suggest import did_you_mean
from nemo_runspec.exceptions import (
    ArtifactError,
    ArtifactNotFoundError,
    ArtifactPublishError,
    ArtifactVersionNotFoundError,
)

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_ALIAS_RE = re.compile(r"^[A-Za-z][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class Artifact:
    """One published version of a named artifact."""

    name: str
    version: int
    path: str
    """Where the payload lives: a local path or an fsspec URL."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    created: str = ""
    backend: str = "fsspec"

    @property
    def ref(self) -> str:
        """``name:vN``, a reference that always resolves to this exact version."""
        return f"{self.name}:v{self.version}"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["metadata"] = dict(self.metadata)
        d["aliases"] = list(self.aliases)
        d["ref"] = self.ref
        return d


def parse_ref(ref: str) -> tuple[str, str]:
    """Split ``name[:version|alias]`` into ``(name, selector)``; selector defaults to ``latest``.

    Accepted selectors: ``latest`` or another alias, ``3``, ``v3``.
    """
    ref = ref.strip()
    if ref.startswith("art://"):
        ref = ref[len("art://") :].split("/", 1)[0]
    name, _, selector = ref.partition(":")
    if not name or not _NAME_RE.match(name):
        raise ArtifactError(
            f"invalid artifact reference {ref!r}",
            hint="use name[:version|alias], e.g. nano3-pretrain-data-tiny:latest or :v3",
        )
    return name, (selector or "latest")


def _version_number(selector: str) -> int | None:
    s = selector[1:] if selector[:1] in ("v", "V") else selector
    return int(s) if s.isdigit() else None


class Backend(Protocol):
    """Storage behind an :class:`ArtifactRegistry`."""

    def publish(self, name: str, source: str | None, *, metadata: Mapping[str, Any],
                aliases: Iterable[str], copy: bool) -> Artifact: ...
    def get(self, name: str, selector: str) -> Artifact: ...
    def names(self) -> list[str]: ...
    def versions(self, name: str) -> list[Artifact]: ...
    def set_alias(self, name: str, alias: str, version: int) -> None: ...


class FsspecBackend:
    """Registry stored under any fsspec URL (local paths are ``file://``)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        import fsspec

        root = str(root)
        self.fs, path = fsspec.core.url_to_fs(root)
        self.protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        self.root = path.rstrip("/") or "/"
        self.url = root

    # -- paths ----------------------------------------------------------------
    def _p(self, *parts: str) -> str:
        return "/".join([self.root, *parts])

    def _url(self, path: str) -> str:
        return path if self.protocol in ("file", "local") else f"{self.protocol}://{path}"

    def _read_json(self, path: str) -> Any:
        with self.fs.open(path, "rb") as f:
            return json.loads(f.read().decode())

    def _write_json_atomic(self, path: str, data: Any, *, exclusive: bool = False) -> None:
        payload = json.dumps(data, indent=2, sort_keys=True).encode()
        if self.protocol in ("file", "local"):
            tmp = f"{path}.tmp-{uuid.uuid4().hex}"
            Path(tmp).write_bytes(payload)
            try:
                if exclusive:
                    os.link(tmp, path)  # fails if path exists: our exclusive commit
                else:
                    os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
            return
        if exclusive and self.fs.exists(path):
            raise FileExistsError(path)
        tmp = f"{path}.tmp-{uuid.uuid4().hex}"
        with self.fs.open(tmp, "wb") as f:
            f.write(payload)
        self.fs.mv(tmp, path)

    # -- reading --------------------------------------------------------------
    def names(self) -> list[str]:
        if not self.fs.exists(self.root):
            return []
        out = []
        for entry in self.fs.ls(self.root, detail=False):
            base = entry.rstrip("/").rsplit("/", 1)[-1]
            if _NAME_RE.match(base) and self._version_numbers(base):
                out.append(base)
        return sorted(out)

    def _version_numbers(self, name: str) -> list[int]:
        d = self._p(name)
        if not self.fs.exists(d):
            return []
        nums = []
        for entry in self.fs.ls(d, detail=False):
            m = re.fullmatch(r"v(\d+)\.json", entry.rstrip("/").rsplit("/", 1)[-1])
            if m:
                nums.append(int(m.group(1)))
        return sorted(nums)

    def _aliases(self, name: str) -> dict[str, int]:
        path = self._p(name, "aliases.json")
        return self._read_json(path) if self.fs.exists(path) else {}

    def _load(self, name: str, version: int, aliases: Mapping[str, int]) -> Artifact:
        rec = self._read_json(self._p(name, f"v{version}.json"))
        return Artifact(
            name=name,
            version=version,
            path=rec["path"],
            metadata=rec.get("metadata", {}),
            aliases=tuple(sorted(a for a, v in aliases.items() if v == version)),
            created=rec.get("created", ""),
            backend="fsspec",
        )

    def versions(self, name: str) -> list[Artifact]:
        aliases = self._aliases(name)
        return [self._load(name, v, aliases) for v in self._version_numbers(name)]

    def get(self, name: str, selector: str) -> Artifact:
        nums = self._version_numbers(name)
        if not nums:
            raise ArtifactNotFoundError(
                f"artifact '{name}' not found in {self.url}",
                key=name,
                hint=did_you_mean(name, self.names()) or "publish it first (e.g. run its data prep stage) or `nemotron nano3 data import`",
            )
        aliases = self._aliases(name)
        number = _version_number(selector)
        if number is None:
            if selector == "latest" and "latest" not in aliases:
                number = nums[-1]
            elif selector in aliases:
                number = aliases[selector]
            else:
                raise ArtifactVersionNotFoundError(
                    f"artifact '{name}' has no alias '{selector}'",
                    key=f"{name}:{selector}",
                    hint=did_you_mean(selector, [*aliases, "latest"], listing=True),
                )
        if number not in nums:
            raise ArtifactVersionNotFoundError(
                f"artifact '{name}' has no version v{number}",
                key=f"{name}:{selector}",
                hint="available: " + ", ".join(f"v{n}" for n in nums),
            )
        return self._load(name, number, aliases)

    # -- writing --------------------------------------------------------------
    def publish(self, name: str, source: str | None, *, metadata: Mapping[str, Any],
                aliases: Iterable[str], copy: bool) -> Artifact:
        self.fs.makedirs(self._p(name), exist_ok=True)
        staging = None
        if copy:
            if source is None:
                raise ArtifactPublishError("copy=True needs a source path", key=name)
            staging = self._p(name, f".staging-{uuid.uuid4().hex}")
            _copy_tree(source, self.fs, staging)
        try:
            for _attempt in range(100):
                nums = self._version_numbers(name)
                version = (nums[-1] + 1) if nums else 1
                payload = self._p(name, f"v{version}") if copy else str(source)
                if copy:
                    if self.fs.exists(payload):  # leftover of a crashed publish
                        self.fs.rm(payload, recursive=True)
                    self.fs.mv(staging, payload, recursive=True)
                record = {
                    "name": name,
                    "version": version,
                    "path": self._url(payload) if copy else str(source),
                    "metadata": dict(metadata),
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
                try:
                    self._write_json_atomic(self._p(name, f"v{version}.json"), record, exclusive=True)
                except FileExistsError:  # another publisher took this number; retry
                    if copy:
                        self.fs.mv(payload, staging, recursive=True)
                    continue
                break
            else:
                raise ArtifactPublishError(f"could not allocate a version for '{name}'", key=name)
        except BaseException:
            if staging and self.fs.exists(staging):
                self.fs.rm(staging, recursive=True)
            raise
        for alias in aliases:
            self.set_alias(name, alias, version)
        return self.get(name, f"v{version}")

    def set_alias(self, name: str, alias: str, version: int) -> None:
        if not _ALIAS_RE.match(alias):
            raise ArtifactError(f"invalid alias {alias!r}", key=name, hint="aliases start with a letter")
        aliases = self._aliases(name)
        aliases[alias] = version
        self._write_json_atomic(self._p(name, "aliases.json"), aliases)

    def gc(self) -> list[str]:
        """Remove staging leftovers of crashed publishes; return what was removed."""
        removed = []
        for name_dir in self.fs.ls(self.root, detail=False) if self.fs.exists(self.root) else []:
            for entry in self.fs.ls(name_dir, detail=False):
                base = entry.rstrip("/").rsplit("/", 1)[-1]
                if base.startswith(".staging-") or ".tmp-" in base:
                    self.fs.rm(entry, recursive=True)
                    removed.append(entry)
        return removed


def _copy_tree(source: str, fs, dest: str) -> None:
    """Copy a local or fsspec ``source`` (file or directory) to ``dest`` on ``fs``."""
    import fsspec

    src_fs, src_path = fsspec.core.url_to_fs(str(source))
    if not src_fs.exists(src_path):
        raise ArtifactPublishError(f"nothing to publish: {source} does not exist")
    if src_fs.isdir(src_path):
        fs.makedirs(dest, exist_ok=True)
        for file in src_fs.find(src_path):
            rel = file[len(src_path.rstrip("/")) + 1 :]
            target = f"{dest}/{rel}"
            fs.makedirs(target.rsplit("/", 1)[0], exist_ok=True)
            with src_fs.open(file, "rb") as fin, fs.open(target, "wb") as fout:
                while chunk := fin.read(8 << 20):
                    fout.write(chunk)
    else:
        fs.makedirs(dest, exist_ok=True)
        base = src_path.rstrip("/").rsplit("/", 1)[-1]
        with src_fs.open(src_path, "rb") as fin, fs.open(f"{dest}/{base}", "wb") as fout:
            while chunk := fin.read(8 << 20):
                fout.write(chunk)


class WandbBackend:
    """W&B artifacts (``wandb`` is imported lazily; no network call until used).

    Artifacts are logged with type ``dataset`` by default; ``path`` of a resolved
    artifact is the local directory after download, or the reference URI for
    reference artifacts.
    """

    def __init__(self, entity: str | None = None, project: str | None = None,
                 artifact_type: str = "dataset", download_root: str | None = None) -> None:
        self.entity = entity
        self.project = project
        self.artifact_type = artifact_type
        self.download_root = download_root

    def _api(self):
        import wandb

        return wandb, wandb.Api()

    def _full(self, name: str, selector: str) -> str:
        prefix = "/".join(p for p in (self.entity, self.project) if p)
        sel = selector if _version_number(selector) is None else f"v{int(_version_number(selector)) - 1}"
        return f"{prefix}/{name}:{sel}" if prefix else f"{name}:{sel}"

    def publish(self, name: str, source: str | None, *, metadata: Mapping[str, Any],
                aliases: Iterable[str], copy: bool) -> Artifact:
        wandb, _ = self._api()
        run = wandb.init(entity=self.entity, project=self.project, job_type="publish",
                         reinit=True)
        try:
            art = wandb.Artifact(name, type=self.artifact_type, metadata=dict(metadata))
            if copy:
                if os.path.isdir(str(source)):
                    art.add_dir(str(source))
                else:
                    art.add_file(str(source))
            else:
                uri = str(source)
                art.add_reference(uri if "://" in uri else f"file://{os.path.abspath(uri)}")
            logged = run.log_artifact(art, aliases=list(aliases))
            logged.wait()
        finally:
            run.finish()
        return self._to_artifact(logged, path=str(source))

    def _to_artifact(self, art, path: str | None = None) -> Artifact:
        version = int(str(art.version).lstrip("v")) + 1  # W&B counts from v0
        return Artifact(
            name=art.name.split(":")[0],
            version=version,
            path=path or "",
            metadata=dict(art.metadata or {}),
            aliases=tuple(sorted(a for a in (art.aliases or []) if not a.startswith("v"))),
            created=str(getattr(art, "created_at", "") or ""),
            backend="wandb",
        )

    def get(self, name: str, selector: str) -> Artifact:
        _, api = self._api()
        try:
            art = api.artifact(self._full(name, selector), type=self.artifact_type)
        except Exception as exc:  # wandb raises CommError/ValueError for unknown refs
            raise ArtifactNotFoundError(f"W&B artifact '{name}:{selector}' not found: {exc}", key=name) from None
        root = None
        if self.download_root:
            root = art.download(root=os.path.join(self.download_root, name, str(art.version)))
        else:
            root = art.download()
        return self._to_artifact(art, path=root)

    def names(self) -> list[str]:
        _, api = self._api()
        collections = api.artifact_type(self.artifact_type, project="/".join(
            p for p in (self.entity, self.project) if p)).collections()
        return sorted(c.name for c in collections)

    def versions(self, name: str) -> list[Artifact]:
        _, api = self._api()
        prefix = "/".join(p for p in (self.entity, self.project) if p)
        arts = api.artifacts(self.artifact_type, f"{prefix}/{name}" if prefix else name)
        return sorted((self._to_artifact(a) for a in arts), key=lambda a: a.version)

    def set_alias(self, name: str, alias: str, version: int) -> None:
        _, api = self._api()
        art = api.artifact(self._full(name, f"v{version}"), type=self.artifact_type)
        if alias not in art.aliases:
            art.aliases.append(alias)
            art.save()


class ArtifactRegistry:
    """Publish and resolve named, versioned artifacts.

    >>> reg = ArtifactRegistry("/tmp/registry")                       # doctest: +SKIP
    >>> art = reg.publish("nano3-pretrain-data-tiny", "out/", metadata={"tokens": 1})
    >>> reg.resolve("nano3-pretrain-data-tiny:latest").path
    """

    def __init__(self, root: str | os.PathLike[str] | None = None, *, backend: Backend | None = None) -> None:
        if backend is None:
            if root is None:
                from nemo_runspec.paths import nemotron_home

                root = str(nemotron_home() / "artifacts")
            backend = FsspecBackend(root)
        self.backend = backend

    @property
    def location(self) -> str:
        return getattr(self.backend, "url", type(self.backend).__name__)

    def publish(self, name: str, path: str | os.PathLike[str] | None, *,
                metadata: Mapping[str, Any] | None = None,
                aliases: Iterable[str] = ("latest",), copy: bool = False) -> Artifact:
        """Register ``path`` as the next version of ``name`` (atomically).

        ``copy=False`` (default) records the path by reference — right for large
        datasets already on shared storage; ``copy=True`` copies the payload
        into the registry first.
        """
        if not _NAME_RE.match(name):
            raise ArtifactPublishError(f"invalid artifact name {name!r}",
                                       hint="letters, digits, '.', '_' and '-'")
        aliases = list(aliases)
        for alias in aliases:  # before anything is written: a bad alias registers nothing
            if not _ALIAS_RE.match(alias) or _version_number(alias) is not None:
                raise ArtifactPublishError(f"invalid alias {alias!r}", key=name,
                                           hint="aliases start with a letter and are not version numbers")
        src = None if path is None else str(path)
        if src is not None and "://" not in src:
            src = str(Path(src).resolve())
            if not copy and not Path(src).exists():
                raise ArtifactPublishError(f"nothing to publish: {src} does not exist", key=name)
        return self.backend.publish(name, src, metadata=metadata or {}, aliases=aliases, copy=copy)

    def resolve(self, ref: str) -> Artifact:
        """Resolve ``name[:version|alias]`` (or ``art://name:version``) to an :class:`Artifact`."""
        name, selector = parse_ref(ref)
        return self.backend.get(name, selector)

    def list(self) -> list[str]:
        """Names of all artifacts with at least one version."""
        return self.backend.names()

    def versions(self, name: str) -> list[Artifact]:
        """All versions of ``name``, oldest first."""
        return self.backend.versions(name)

    def set_alias(self, ref: str, alias: str) -> Artifact:
        """Point ``alias`` at the version ``ref`` resolves to."""
        art = self.resolve(ref)
        self.backend.set_alias(art.name, alias, art.version)
        return self.resolve(f"{art.name}:v{art.version}")


_REGISTRY: ArtifactRegistry | None = None


def registry_from_config(artifacts: Mapping[str, Any] | None, *,
                         wandb: Mapping[str, Any] | None = None) -> ArtifactRegistry:
    """Build a registry from an env.toml ``[artifacts]`` table (``backend``, ``root``)."""
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


def get_registry() -> ArtifactRegistry:
    """The process-wide registry.

    Order: :func:`set_registry`, ``$NEMOTRON_ARTIFACTS_ROOT``, the ``[artifacts]``
    section of the discovered env.toml, ``$NEMOTRON_HOME/artifacts``.
    """
    global _REGISTRY
    if _REGISTRY is None:
        root = os.environ.get("NEMOTRON_ARTIFACTS_ROOT")
        if root:
            _REGISTRY = ArtifactRegistry(root)
        else:
            artifacts, wandb = _env_sections()
            _REGISTRY = registry_from_config(artifacts, wandb=wandb)
    return _REGISTRY


def _env_sections() -> tuple[dict, dict]:
    try:
        from nemo_runspec import env as env_mod

        path = env_mod.find_env_file()
        if path is None:
            return {}, {}
        ef = env_mod.load_env_file(path)  # read once for both sections
        return env_mod.get_artifacts_config(ef), env_mod.get_wandb_config(ef)
    except (ImportError, AttributeError):
        return {}, {}


def set_registry(registry: ArtifactRegistry | None) -> None:
    """Install ``registry`` as the process-wide registry (``None`` resets)."""
    global _REGISTRY
    _REGISTRY = registry
