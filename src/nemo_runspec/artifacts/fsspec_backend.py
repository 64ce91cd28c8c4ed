"""The default artifact store: any fsspec URL (local paths are ``file://``).

Layout::

    <root>/<name>/v<N>/...                    payload (when published with copy=True)
    <root>/<name>/v<N>.json                   the version record: the commit point
    <root>/<name>/aliases.json                {"latest": N, ...}
    <root>/<name>/aliases.json.pending-v<N>   the alias map publish N sets, until moved into place
    <root>/<name>/.lock  (or .lease)          the write lock (:mod:`~nemo_runspec.artifacts.locking`)

A publish with ``copy=True`` first copies the payload into a hidden
``.staging-*`` directory, holding no lock. Then, holding the artifact's write
lock, it checks ``aliases.json``, takes the next version number, writes the new
alias map as ``aliases.json.pending-vN``, moves the payload to ``vN/``, creates
``vN.json`` (the commit point) and moves the pending map over ``aliases.json``.

- A failure before the commit point undoes every step: no record, no payload,
  aliases unchanged.
- A pending map whose version record exists is the current alias map for
  readers, and the next writer moves it into place: a publisher killed between
  the last two steps has still published, aliases included.
- A corrupted ``aliases.json`` or ``vN.json`` is an :class:`ArtifactError` naming
  the file (:class:`ArtifactPublishError` when publishing; nothing is written).
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from nemo_runspec._suggest import did_you_mean
from nemo_runspec.artifacts.errors import (
    ArtifactError,
    ArtifactNotFoundError,
    ArtifactPublishError,
    ArtifactVersionNotFoundError,
)
from nemo_runspec.artifacts.locking import (
    RegistryLock,
    create_local_exclusive,
    create_remote_exclusive,
    replace_local,
)
from nemo_runspec.artifacts.refs import ALIAS_RE, NAME_RE, Artifact, version_number

_RECORD_RE = re.compile(r"v(\d+)\.json")
_PENDING_RE = re.compile(r"aliases\.json\.pending-v(\d+)")
_ALIASES = "aliases.json"


def _dumps(data: object) -> bytes:
    return json.dumps(data, indent=2, sort_keys=True).encode()


class FsspecBackend:
    """Registry stored under any fsspec URL (local paths are ``file://``).

    ``lock_timeout`` bounds the wait for another publisher of the same artifact
    (it holds the lock only while committing, not while copying).
    """

    def __init__(self, root: str | os.PathLike[str], *, lock_timeout: float = 120.0) -> None:
        import fsspec

        root = str(root)
        self.fs, path = fsspec.core.url_to_fs(root)
        self.protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        self.local = self.protocol in ("file", "local")
        self.root = path.rstrip("/") or "/"
        self.url = root
        self.lock_timeout = lock_timeout

    # -- paths and raw I/O ----------------------------------------------------
    def _p(self, *parts: str) -> str:
        return "/".join([self.root, *parts])

    def _url(self, path: str) -> str:
        return path if self.local else f"{self.protocol}://{path}"

    def _pending(self, name: str, version: int) -> str:
        return self._p(name, f"{_ALIASES}.pending-v{version}")

    def _lock(self, name: str) -> RegistryLock:
        return RegistryLock(self.fs, self._p(name), local=self.local, timeout=self.lock_timeout,
                            url=self._url(self._p(name)))

    def _read_json(self, path: str, what: str, hint: str) -> Any:
        """Parse ``path``; ``FileNotFoundError`` passes, anything else unreadable is an ArtifactError."""
        try:
            with self.fs.open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise ArtifactError(f"cannot read {what}: {exc.strerror or exc}", path=self._url(path)) from None
        try:
            return json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise ArtifactError(f"corrupt {what}: not UTF-8 text", path=self._url(path), hint=hint) from None
        except json.JSONDecodeError as exc:
            raise ArtifactError(f"corrupt {what}: invalid JSON, {exc.msg[:1].lower()}{exc.msg[1:]}",
                                path=self._url(path), line=exc.lineno, hint=hint) from None

    def _write_json_atomic(self, path: str, data: object, *, exclusive: bool = False) -> None:
        """Write ``data`` as JSON in one step; ``exclusive`` raises ``FileExistsError`` if ``path`` exists."""
        payload = _dumps(data)
        if self.local:
            (create_local_exclusive if exclusive else replace_local)(path, payload)
        elif exclusive:
            create_remote_exclusive(self.fs, path, payload)
        else:
            tmp = f"{path}.tmp-{uuid.uuid4().hex}"
            self.fs.pipe_file(tmp, payload)
            self.fs.mv(tmp, path)

    def _move(self, src: str, dst: str) -> None:
        if self.local:
            os.replace(src, dst)
        else:
            self.fs.mv(src, dst, recursive=True)

    def _remove(self, path: str) -> None:
        try:
            self.fs.rm(path, recursive=True)
        except FileNotFoundError:
            pass

    # -- reading --------------------------------------------------------------
    def _listing(self, name: str) -> tuple[list[int], list[int]]:
        """From one directory listing: versions with a record, and versions with a pending alias map."""
        d = self._p(name)
        if not self.local:
            self.fs.invalidate_cache(d)  # remote listings are cached by fsspec
        try:
            entries = self.fs.ls(d, detail=False)
        except (FileNotFoundError, NotADirectoryError):
            return [], []
        nums, pending = [], []
        for entry in entries:
            base = entry.rstrip("/").rsplit("/", 1)[-1]
            if m := _RECORD_RE.fullmatch(base):
                nums.append(int(m.group(1)))
            elif m := _PENDING_RE.fullmatch(base):
                pending.append(int(m.group(1)))
        return sorted(nums), sorted(pending)

    def _version_numbers(self, name: str) -> list[int]:
        return self._listing(name)[0]

    def names(self) -> list[str]:
        """Names of all artifacts with at least one version."""
        if not self.fs.exists(self.root):
            return []
        out = []
        for entry in self.fs.ls(self.root, detail=False):
            base = entry.rstrip("/").rsplit("/", 1)[-1]
            if NAME_RE.match(base) and self._version_numbers(base):
                out.append(base)
        return sorted(out)

    def _read_aliases(self, name: str, path: str) -> dict[str, int]:
        """The alias map in ``path``, checked; ``FileNotFoundError`` if there is none."""
        what = f"alias file of artifact '{name}'"
        hint = ("restore it, or delete it to drop these aliases: the versions stay "
                "and 'latest' falls back to the highest one")
        data = self._read_json(path, what, hint)
        if not isinstance(data, dict):
            raise ArtifactError(f"corrupt {what}: expected an object of alias -> version number, "
                                f"found {type(data).__name__}", path=self._url(path), hint=hint)
        for alias, version in data.items():
            if not ALIAS_RE.match(alias):
                raise ArtifactError(f"corrupt {what}: invalid alias {alias!r}", path=self._url(path),
                                    hint=hint)
            if type(version) is not int or version < 1:
                raise ArtifactError(f"corrupt {what}: alias {alias!r} maps to {version!r}, "
                                    "not a version number", path=self._url(path), hint=hint)
        return data

    def _alias_file(self, name: str) -> dict[str, int]:
        try:
            return self._read_aliases(name, self._p(name, _ALIASES))
        except FileNotFoundError:
            return {}

    def _aliases(self, name: str, nums: list[int] | None = None, pending: list[int] | None = None) -> dict[str, int]:
        """The current alias map: a committed pending map if one is there, else aliases.json."""
        if nums is None or pending is None:
            nums, pending = self._listing(name)
        committed = [v for v in pending if v in nums]
        if committed:
            try:
                return self._read_aliases(name, self._pending(name, committed[-1]))
            except FileNotFoundError:  # moved into place since the listing
                pass
        return self._alias_file(name)

    def _load(self, name: str, version: int, aliases: Mapping[str, int]) -> Artifact:
        path = self._p(name, f"v{version}.json")
        what = f"version record of {name}:v{version}"
        hint = f"restore it, or move it out of the directory to drop version v{version}"
        rec = self._read_json(path, what, hint)
        problem = None
        if not isinstance(rec, dict):
            problem = f"expected an object, found {type(rec).__name__}"
        elif not isinstance(rec.get("path"), str) or not rec["path"]:
            problem = "no 'path' string"
        elif not isinstance(rec.get("metadata", {}), dict):
            problem = "'metadata' is not an object"
        elif not isinstance(rec.get("created", ""), str):
            problem = "'created' is not a string"
        elif rec.get("version", version) != version:
            problem = f"it says version {rec['version']!r}"
        if problem:
            raise ArtifactError(f"corrupt {what}: {problem}", path=self._url(path), hint=hint)
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
        """All versions of ``name``, oldest first."""
        nums, pending = self._listing(name)
        aliases = self._aliases(name, nums, pending)
        return [self._load(name, v, aliases) for v in nums]

    def get(self, name: str, selector: str) -> Artifact:
        """The version of ``name`` that ``selector`` (``vN``, ``N`` or an alias) names."""
        nums, pending = self._listing(name)
        if not nums:
            raise ArtifactNotFoundError(
                f"artifact '{name}' not found in {self.url}",
                key=name,
                hint=did_you_mean(name, self.names()) or "publish it first (e.g. run its data prep stage) or `nemotron nano3 data import`",
            )
        aliases = self._aliases(name, nums, pending)
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
        if number not in nums:  # the alias map may be newer than the listing
            nums = self._version_numbers(name)
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
        """Register ``source`` as the next version of ``name``, all or nothing (see the module doc)."""
        aliases = list(dict.fromkeys(aliases))
        for alias in aliases:
            if not ALIAS_RE.match(alias):
                raise ArtifactPublishError(f"invalid alias {alias!r}", key=name, hint="aliases start with a letter")
        if copy and source is None:
            raise ArtifactPublishError("copy=True needs a source path", key=name)
        try:
            metadata = json.loads(json.dumps(dict(metadata)))
        except (TypeError, ValueError) as exc:
            raise ArtifactPublishError(f"metadata is not JSON-serializable: {exc}", key=name) from None
        self.fs.makedirs(self._p(name), exist_ok=True)
        staging = self._p(name, f".staging-{uuid.uuid4().hex}") if copy else None
        try:
            if staging is not None:
                _copy_tree(str(source), self.fs, staging)
            with self._lock(name):
                for _attempt in range(20):
                    try:
                        record, alias_map = self._commit(name, source, staging, metadata, aliases)
                        break
                    except FileExistsError:  # a writer that ignored the lock took this number
                        continue
                else:
                    raise ArtifactPublishError(f"could not allocate a version for '{name}'", key=name)
        except ArtifactPublishError:
            raise
        except ArtifactError as exc:  # a corrupt alias file, a lock wait that timed out
            raise ArtifactPublishError(f"{exc.problem}; nothing was published", path=exc.path, line=exc.line,
                                       key=name, hint=exc.hint) from None
        finally:
            if staging is not None and self.fs.exists(staging):
                self._remove(staging)
        version = record["version"]
        return Artifact(name=name, version=version, path=record["path"], metadata=record["metadata"],
                        aliases=tuple(sorted(a for a, v in alias_map.items() if v == version)),
                        created=record["created"], backend="fsspec")

    def _commit(self, name: str, source: str | None, staging: str | None, metadata: dict[str, Any],
                aliases: list[str]) -> tuple[dict[str, Any], dict[str, int]]:
        """Allocate the next version and commit it (caller holds the lock); undo everything on failure."""
        nums, pending = self._listing(name)
        self._recover(name, nums, pending)
        current = self._alias_file(name)
        version = nums[-1] + 1 if nums else 1
        payload = self._p(name, f"v{version}")
        record = {
            "name": name,
            "version": version,
            "path": self._url(payload) if staging is not None else str(source),
            "metadata": metadata,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        alias_map = {**current, **dict.fromkeys(aliases, version)}
        pending_path = self._pending(name, version)
        moved = False
        try:
            self._write_json_atomic(pending_path, alias_map)
            if staging is not None:
                if self.fs.exists(payload):  # left by a publisher killed before its commit point
                    self._remove(payload)
                self._move(staging, payload)
                moved = True
            self._write_json_atomic(self._p(name, f"v{version}.json"), record, exclusive=True)
        except BaseException:
            if moved:
                self._move(payload, staging)  # back, for a retry or the caller's cleanup
            self._remove(pending_path)
            raise
        try:
            self._move(pending_path, self._p(name, _ALIASES))
        except Exception:  # noqa: BLE001 - committed already: readers use the pending map, the next writer moves it
            pass
        return record, alias_map

    def _recover(self, name: str, nums: list[int], pending: list[int]) -> None:
        """Finish or undo the alias update of a writer killed mid-publish (caller holds the lock)."""
        committed = [v for v in pending if v in nums]
        for v in pending:
            if not committed or v != committed[-1]:
                self._remove(self._pending(name, v))
        if committed:
            self._move(self._pending(name, committed[-1]), self._p(name, _ALIASES))

    def set_alias(self, name: str, alias: str, version: int) -> None:
        """Point ``alias`` of ``name`` at ``version`` (under the artifact's write lock)."""
        if not ALIAS_RE.match(alias):
            raise ArtifactError(f"invalid alias {alias!r}", key=name, hint="aliases start with a letter")
        with self._lock(name):
            nums, pending = self._listing(name)
            self._recover(name, nums, pending)
            if version not in nums:
                raise ArtifactVersionNotFoundError(f"artifact '{name}' has no version v{version}",
                                                   key=f"{name}:v{version}")
            aliases = self._alias_file(name)
            aliases[alias] = version
            self._write_json_atomic(self._p(name, _ALIASES), aliases)

    def gc(self) -> list[str]:
        """Remove what crashed publishes left; return the removed paths.

        Under each artifact's write lock: unfinished alias updates are finished or
        dropped, and payload directories without a version record, temporary
        files and staging directories are removed. Run it when no publish is
        copying: the staging directory of a copy in progress (made before the
        lock is taken) looks the same as a leftover.
        """
        removed: list[str] = []
        if not self.fs.exists(self.root):
            return removed
        for name_dir in self.fs.ls(self.root, detail=False):
            name = name_dir.rstrip("/").rsplit("/", 1)[-1]
            if not NAME_RE.match(name) or not self.fs.isdir(name_dir):
                continue
            with self._lock(name):
                nums, pending = self._listing(name)
                self._recover(name, nums, pending)
                for entry in self.fs.ls(name_dir, detail=False):
                    base = entry.rstrip("/").rsplit("/", 1)[-1]
                    payload = re.fullmatch(r"v(\d+)", base)
                    if (base.startswith(".staging-") or ".tmp-" in base
                            or (payload and int(payload.group(1)) not in nums)):
                        self._remove(entry)
                        removed.append(self._url(entry))
        return removed


def _copy_tree(source: str, fs, dest: str) -> None:
    """Copy a local or fsspec ``source`` (file or directory) to ``dest`` on ``fs``.

    A local directory is walked with :func:`nemo_runspec.files.walk`: symlinked
    directories are copied as their content, and a symlink loop, a dangling link or
    anything that is not a regular file (a FIFO, a device) is one line naming it,
    found before anything is copied."""
    import fsspec

    src_fs, src_path = fsspec.core.url_to_fs(str(source))
    if not src_fs.exists(src_path):
        raise ArtifactPublishError(f"nothing to publish: {source} does not exist")
    if src_fs.isdir(src_path):
        fs.makedirs(dest, exist_ok=True)
        if getattr(src_fs, "protocol", None) in ("file", ("file", "local")):
            pairs = _local_files(src_path)
        else:
            pairs = [(file, file[len(src_path.rstrip("/")) + 1 :]) for file in src_fs.find(src_path)]
        for file, rel in pairs:
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


def _local_files(root: str) -> list[tuple[str, str]]:
    """``(path, path relative to root)`` of every file under the local directory ``root``."""
    import errno
    import os
    import stat

    from nemo_runspec.files import TreeLoop, kind_of, walk

    def loop(found: TreeLoop) -> None:
        raise ArtifactPublishError(found.words(), path=found.link, hint=found.hint)

    def unreadable(exc: OSError) -> None:
        raise ArtifactPublishError(f"cannot read directory: {exc.strerror or exc}",
                                   path=exc.filename or root)

    out: list[tuple[str, str]] = []
    for dirpath, _, names in walk(root, on_loop=loop, on_error=unreadable):
        for name in sorted(names):
            path = os.path.join(dirpath, name)
            try:
                mode = os.stat(path).st_mode
            except OSError as exc:
                what = "a symlink loop" if os.path.islink(path) and exc.errno == errno.ELOOP else (
                    "a symlink to nothing" if os.path.islink(path) else exc.strerror)
                raise ArtifactPublishError(f"cannot copy: {what}", path=path,
                                           hint="fix or remove it, or import without --copy") from None
            kind = kind_of(mode)
            if kind is not None and not stat.S_ISDIR(mode):
                raise ArtifactPublishError(f"cannot copy: it is {kind}, not a regular file", path=path,
                                           hint="remove it, or import without --copy")
            out.append((path, os.path.relpath(path, root).replace(os.sep, "/")))
    return out
