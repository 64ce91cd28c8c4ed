"""The default artifact store: any fsspec URL (local paths are ``file://``).

Layout::

    <root>/<name>/v<N>/...        payload (when published with copy=True)
    <root>/<name>/v<N>.json       the version record: the commit point
    <root>/<name>/aliases.json    {"latest": N, ...}

Publishing is atomic: the payload is copied into a hidden staging directory,
moved into place, and only then is the version record written (exclusively, so
two concurrent publishers never get the same number). A crash at any point
leaves no half version: without its record a version does not exist, and
staging leftovers are ignored (and removed by :meth:`FsspecBackend.gc`).
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

from nemo_runspec._suggest import did_you_mean
from nemo_runspec.artifacts.refs import ALIAS_RE, NAME_RE, Artifact, version_number
from nemo_runspec.exceptions import (
    ArtifactError,
    ArtifactNotFoundError,
    ArtifactPublishError,
    ArtifactVersionNotFoundError,
)


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
            if NAME_RE.match(base) and self._version_numbers(base):
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
        number = version_number(selector)
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
        if not ALIAS_RE.match(alias):
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
