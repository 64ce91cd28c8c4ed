"""W&B artifacts as the artifact store (``[artifacts] backend = "wandb"``).

``wandb`` is imported only when a method needs it (:func:`import_wandb`); when it
is not installed that is a one-line error naming the ``nemotron[wandb]`` extra.
Publishing starts a short ``job_type="publish"`` run of its own
(``reinit="create_new"``: a run the process already has, such as a training
run, is left alone) and logs one artifact version to it; resolving, listing and
aliasing go through the public ``wandb.Api()``.

So that a W&B registry behaves like the fsspec one
(``tests/nemo_runspec/artifacts/test_backend_contract.py`` runs one suite on both):

- our ``vN`` is W&B's ``v(N-1)`` (W&B counts from v0);
- every publish is a new version. W&B keeps one version per content digest, so
  each version carries a small record file (:data:`RECORD_FILE`: source, copy
  or reference, a publish id) that makes its digest unique; the same record is
  in the version's metadata under :data:`RECORD_KEY` (stripped when read back);
- ``latest`` is W&B's own alias of the newest version; other aliases are W&B
  aliases, unique within an artifact, so :meth:`WandbBackend.set_alias` moves one;
- ``path`` of a resolved version is the recorded source for a version published
  by reference (``copy=False``: a path on shared storage; W&B lists its files
  by path and size without reading them, ``checksum=False``, and nothing is
  downloaded), and the download directory for a copied one.

With ``WANDB_MODE=offline`` (env.toml ``[wandb] mode = "offline"``) a publish
writes the run and its artifact under ``$WANDB_DIR/wandb/offline-run-*`` and
contacts nothing; ``wandb sync <that dir>`` uploads it later, and W&B assigns the
version number then, so the returned :class:`Artifact` has ``version`` 0 and
:attr:`WandbBackend.last_offline_run` names the directory to sync.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from nemo_runspec._suggest import did_you_mean
from nemo_runspec.artifacts.errors import (
    ArtifactError,
    ArtifactNotFoundError,
    ArtifactPublishError,
    ArtifactVersionNotFoundError,
)
from nemo_runspec.artifacts.refs import ALIAS_RE, Artifact, version_number

#: the pip extra that installs wandb
EXTRA = "nemotron[wandb]"
#: the file each published version carries (makes its content digest unique)
RECORD_FILE = ".nemotron-publish.json"
#: the metadata key holding the same record (removed from ``Artifact.metadata`` when read)
RECORD_KEY = "nemotron_publish"
#: files listed for a directory published by reference (wandb's default stops at 10,000)
MAX_REFERENCE_FILES = 1_000_000
_VERSION_ALIAS = re.compile(r"v\d+")
_KEY_HINT = "check the network, WANDB_BASE_URL and the API key (env.toml [wandb] api_key_env, default WANDB_API_KEY)"


def import_wandb(key: str = "artifacts.backend") -> Any:
    """``import wandb``; when it is not installed, a one-line :class:`ArtifactError` naming the extra."""
    try:
        import wandb
    except ImportError:
        raise ArtifactError("W&B is configured but the wandb package is not installed", key=key,
                            hint=f"pip install '{EXTRA}'") from None
    return wandb


def release_service(wandb: Any, wait: float = 5.0) -> None:
    """End wandb's service process within ``wait`` seconds after the API gave up on it.

    When ``wandb.Api()`` times out, wandb-core goes on retrying the request, and
    wandb's own exit hook waits for it: the CLI would print its one-line error and
    then hang at exit for many minutes (seen: over 15). So the service is torn down
    here, and killed if it does not end in time. Nothing is done while a run is
    active in this process: its data must not be cut off.
    """
    import threading

    if getattr(wandb, "run", None) is not None:
        return
    setup = getattr(getattr(wandb, "sdk", None), "wandb_setup", None)
    connection = getattr(getattr(setup, "_singleton", None), "_connection", None)
    process = getattr(getattr(connection, "_proc", None), "_process", None)  # wandb 0.2x-0.31 layout
    ender = threading.Thread(target=wandb.teardown, name="nemotron-wandb-teardown", daemon=True)
    ender.start()
    ender.join(wait)
    if ender.is_alive() and process is not None:
        process.kill()
        ender.join(wait)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class WandbBackend:
    """W&B artifacts of ``entity``/``project`` (``wandb`` imported lazily; no network call until used).

    Versions are logged with type ``artifact_type`` (default ``dataset``).
    ``download_root`` is where copied versions are downloaded on resolve
    (``<root>/<name>/v<N>``; default: wandb's own ``./artifacts``);
    ``api_timeout`` is the HTTP timeout of ``wandb.Api`` (None: wandb's default).
    """

    def __init__(self, entity: str | None = None, project: str | None = None,
                 artifact_type: str = "dataset", download_root: str | None = None,
                 api_timeout: int | None = None) -> None:
        self.entity = entity or None
        self.project = project or None
        self.artifact_type = artifact_type
        self.download_root = download_root or None
        self.api_timeout = api_timeout
        #: the run directory of the last offline publish (upload it with ``wandb sync``)
        self.last_offline_run: str | None = None

    # -- where ----------------------------------------------------------------
    @property
    def url(self) -> str:
        """``wandb://ENTITY/PROJECT[?root=DIR]``: this registry as one string (``$NEMOTRON_ARTIFACTS_ROOT``)."""
        query = f"?{urlencode({'root': self.download_root})}" if self.download_root else ""
        return f"wandb://{self.entity or ''}/{self.project or ''}{query}"

    @classmethod
    def from_url(cls, url: str) -> WandbBackend:
        """The backend :attr:`url` describes."""
        parts = urlsplit(url)
        if parts.scheme != "wandb":
            raise ArtifactError(f"not a W&B registry URL: {url!r}", hint="use wandb://ENTITY/PROJECT")
        root = parse_qs(parts.query).get("root", [None])[0]
        return cls(entity=parts.netloc or None, project=parts.path.strip("/") or None, download_root=root)

    def _prefix(self) -> str:
        return "/".join(p for p in (self.entity, self.project) if p)

    def _collection(self, name: str) -> str:
        prefix = self._prefix()
        return f"{prefix}/{name}" if prefix else name

    def _full(self, name: str, selector: str) -> str:
        number = version_number(selector)
        return f"{self._collection(name)}:{selector if number is None else f'v{number - 1}'}"

    def _api(self) -> Any:
        wandb = import_wandb()
        try:
            return wandb.Api(timeout=self.api_timeout) if self.api_timeout else wandb.Api()
        except Exception as exc:  # noqa: BLE001 - no key, unreachable server: one line
            release_service(wandb)
            raise ArtifactError(f"cannot use the W&B API: {_first_line(exc)}", key="artifacts.backend",
                                hint=_KEY_HINT) from None

    # -- writing --------------------------------------------------------------
    def publish(self, name: str, source: str | None, *, metadata: Mapping[str, Any],
                aliases: Iterable[str], copy: bool) -> Artifact:
        """Log ``source`` as a new version of ``name`` in a run of its own (see the module doc)."""
        aliases = list(dict.fromkeys(aliases))
        for alias in aliases:
            if not ALIAS_RE.match(alias):
                raise ArtifactPublishError(f"invalid alias {alias!r}", key=name, hint="aliases start with a letter")
        if copy and source is None:
            raise ArtifactPublishError("copy=True needs a source path", key=name)
        if copy and "://" in str(source):
            raise ArtifactPublishError(f"the W&B backend copies local files only, not {source}", key=name,
                                       hint="publish it by reference (copy=False)")
        try:
            metadata = json.loads(json.dumps(dict(metadata)))
        except (TypeError, ValueError) as exc:
            raise ArtifactPublishError(f"metadata is not JSON-serializable: {exc}", key=name) from None
        wandb = import_wandb()
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        record = {"source": source, "copy": copy, "publish_id": uuid.uuid4().hex, "created": created}
        art = wandb.Artifact(name, type=self.artifact_type, metadata={**metadata, RECORD_KEY: record})
        with art.new_file(RECORD_FILE, mode="w") as f:
            json.dump(record, f, sort_keys=True)
        if source is not None:
            if copy and os.path.isdir(source):
                art.add_dir(source)
            elif copy:
                art.add_file(source)
            else:
                uri = source if "://" in source else Path(source).resolve().as_uri()
                art.add_reference(uri, checksum=False, max_objects=MAX_REFERENCE_FILES)
        try:
            run = wandb.init(entity=self.entity, project=self.project, job_type="publish",
                             name=f"publish-{name}", reinit="create_new")
        except Exception as exc:  # noqa: BLE001 - no key, no network: one line, nothing published
            raise ArtifactPublishError(f"cannot start a W&B run to publish '{name}': {_first_line(exc)}",
                                       key=name, hint=_KEY_HINT) from None
        mode = str(getattr(run.settings, "mode", "") or "")
        try:
            if mode == "disabled":
                raise ArtifactPublishError(f"W&B is disabled (WANDB_MODE=disabled): '{name}' cannot be published "
                                           "to the W&B artifacts backend", key=name,
                                           hint='unset WANDB_MODE / [wandb] mode, or use [artifacts] backend = "file"')
            logged = run.log_artifact(art, aliases=aliases)
            if mode in ("offline", "dryrun"):
                self.last_offline_run = str(Path(run.dir).parent)
                version = 0
            else:
                logged.wait()
                version = int(str(logged.version).lstrip("v")) + 1
        except ArtifactPublishError:
            run.finish(exit_code=1)
            raise
        except Exception as exc:  # noqa: BLE001 - upload or commit failed: one line
            run.finish(exit_code=1)
            raise ArtifactPublishError(f"publishing '{name}' to W&B failed: {_first_line(exc)}", key=name,
                                       hint=_KEY_HINT) from None
        run.finish()
        return Artifact(name=name, version=version, path="" if source is None else str(source),
                        metadata=metadata, aliases=tuple(sorted(aliases)), created=created, backend="wandb")

    def set_alias(self, name: str, alias: str, version: int) -> None:
        """Point ``alias`` of ``name`` at ``version`` (W&B moves it off the version that had it)."""
        if not ALIAS_RE.match(alias) or _VERSION_ALIAS.fullmatch(alias):
            raise ArtifactError(f"invalid alias {alias!r}", key=name, hint="aliases start with a letter")
        art = self._fetch(name, f"v{version}")
        if alias not in art.aliases:
            art.aliases.append(alias)
            art.save()

    # -- reading --------------------------------------------------------------
    def _fetch(self, name: str, selector: str) -> Any:
        api = self._api()
        try:
            return api.artifact(self._full(name, selector), type=self.artifact_type)
        except Exception as exc:  # noqa: BLE001 - wandb raises ValueError or CommError for unknown refs
            raise self._lookup_error(api, name, selector, exc) from None

    def _lookup_error(self, api: Any, name: str, selector: str, exc: BaseException) -> ArtifactError:
        """The error for a failed lookup: unreachable, no such artifact, or no such version/alias."""
        try:
            exists = api.artifact_collection_exists(self._collection(name), type=self.artifact_type)
        except Exception:  # noqa: BLE001 - the server did not answer either
            return ArtifactError(f"cannot reach W&B to resolve '{name}:{selector}': {_first_line(exc)}",
                                 key=name, hint=_KEY_HINT)
        if not exists:
            try:
                known = self.names()
            except ArtifactError:
                known = []
            return ArtifactNotFoundError(
                f"artifact '{name}' not found in W&B project {self._prefix() or '(default)'}", key=name,
                hint=did_you_mean(name, known) or "publish it first (e.g. run its data prep stage)")
        versions = self.versions(name)
        number = version_number(selector)
        if number is not None:
            return ArtifactVersionNotFoundError(
                f"artifact '{name}' has no version v{number}", key=f"{name}:{selector}",
                hint="available: " + ", ".join(f"v{a.version}" for a in versions))
        aliases = sorted({a for v in versions for a in v.aliases} | {"latest"})
        return ArtifactVersionNotFoundError(f"artifact '{name}' has no alias '{selector}'",
                                            key=f"{name}:{selector}",
                                            hint=did_you_mean(selector, aliases, listing=True))

    def _to_artifact(self, art: Any, *, download: bool) -> Artifact:
        version = int(str(art.version).lstrip("v")) + 1  # W&B counts from v0
        metadata = dict(art.metadata or {})
        record = metadata.pop(RECORD_KEY, None) or {}
        name = str(art.name).split(":")[0]
        if record.get("copy") is False:
            path = str(record.get("source") or "")
        elif download:
            root = os.path.join(self.download_root, name, f"v{version}") if self.download_root else None
            path = str(art.download(root=root))
        else:
            path = ""  # a copied version: resolve() downloads it
        return Artifact(
            name=name,
            version=version,
            path=path,
            metadata=metadata,
            aliases=tuple(sorted(a for a in (art.aliases or []) if not _VERSION_ALIAS.fullmatch(a))),
            created=str(record.get("created") or getattr(art, "created_at", "") or ""),
            backend="wandb",
        )

    def get(self, name: str, selector: str) -> Artifact:
        """The version ``selector`` (``vN``, ``N`` or an alias) names; a copied one is downloaded."""
        return self._to_artifact(self._fetch(name, selector), download=True)

    def names(self) -> list[str]:
        """Names of the project's artifacts of :attr:`artifact_type`."""
        api = self._api()
        try:
            collections = api.artifact_type(self.artifact_type, project=self._prefix() or None).collections()
            return sorted(c.name for c in collections)
        except Exception as exc:  # noqa: BLE001 - no such type yet, or unreachable
            if "not found" in str(exc).lower():
                return []
            raise ArtifactError(f"cannot list W&B artifacts of {self._prefix() or '(default)'}: "
                                f"{_first_line(exc)}", key="artifacts.backend", hint=_KEY_HINT) from None

    def versions(self, name: str) -> list[Artifact]:
        """All versions of ``name``, oldest first (copied versions are not downloaded: ``path`` is empty)."""
        api = self._api()
        try:
            arts = list(api.artifacts(self.artifact_type, self._collection(name)))
        except Exception as exc:  # noqa: BLE001 - no such artifact, or unreachable
            try:
                exists = api.artifact_collection_exists(self._collection(name), type=self.artifact_type)
            except Exception:  # noqa: BLE001
                exists = True
            if not exists:
                return []
            raise ArtifactError(f"cannot list versions of W&B artifact '{name}': {_first_line(exc)}",
                                key=name, hint=_KEY_HINT) from None
        return sorted((self._to_artifact(a, download=False) for a in arts), key=lambda a: a.version)
