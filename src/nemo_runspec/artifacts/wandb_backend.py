"""W&B artifacts as the artifact store (``wandb`` is imported only when used)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from nemo_runspec.artifacts.refs import Artifact, version_number
from nemo_runspec.exceptions import ArtifactNotFoundError


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
        sel = selector if version_number(selector) is None else f"v{int(version_number(selector)) - 1}"
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
