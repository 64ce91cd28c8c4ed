"""W&B in tests: offline runs read back, and ``wandb.Api()`` answered from them.

No W&B server runs here, and no test may reach one. :func:`offline_env` puts
wandb in offline mode with every directory under ``tmp`` and points every way
out (``WANDB_BASE_URL``, HTTP proxies) at ``127.0.0.1:9``, where nothing
listens, and refuses in-process connections to anything but loopback: a W&B
network call fails the test instead of happening.

Reading an offline run: ``run-<id>.wandb`` is the record log W&B writes and
``wandb sync`` uploads. wandb >= 0.2x has no Python reader for it any more
(``wandb.sdk.internal.datastore`` went away when syncing moved into the Go
``wandb-core``; ``wandb sync --view`` with it), so :func:`records` reads it
here: LevelDB's log framing (a 7-byte ``:W&B`` header, 32 KiB blocks, records
with a CRC-32 over type and payload, split FIRST/MIDDLE/LAST across blocks)
around protobuf ``Record`` messages parsed with the schema wandb ships and uses
itself, ``wandb.proto.wandb_internal_pb2``. The CRC is checked, so a format
change fails loudly rather than reading garbage.

:class:`OfflineServer` is what the W&B server would hold after ``wandb sync`` of
those runs: it reads their artifact records and applies the server's rules
(one version per new content digest, numbered from v0 per artifact; aliases
unique within an artifact; ``latest`` on the newest version). :class:`FakeApi`
answers the calls of the public ``wandb.Api`` that ``WandbBackend`` makes from
it, raising what wandb 0.31 raises for unknown names. Only these server rules
are emulated; everything on the client side is the real wandb package.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NOWHERE = "http://127.0.0.1:9"
_BLOCK = 32768
_HEADER = struct.Struct("<4sHB")  # ":W&B", magic 0xBEE1, version
_RECORD = struct.Struct("<IHB")  # crc32, length, type


def offline_env(monkeypatch: Any, tmp: Path) -> Path:
    """Offline wandb with all of its files under ``tmp``; returns ``WANDB_DIR``."""
    wandb_dir = tmp / "wandb-dir"
    for name in ("wandb-dir", "wandb-data", "wandb-cache", "wandb-config", "wandb-artifacts"):
        (tmp / name).mkdir(parents=True, exist_ok=True)
    for var in [v for v in os.environ if v.startswith("WANDB_")]:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(wandb_dir))
    monkeypatch.setenv("WANDB_DATA_DIR", str(tmp / "wandb-data"))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp / "wandb-cache"))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp / "wandb-config"))
    monkeypatch.setenv("WANDB_ARTIFACT_DIR", str(tmp / "wandb-artifacts"))
    monkeypatch.setenv("WANDB_BASE_URL", NOWHERE)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(var, NOWHERE)
    for var in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    real_connect = socket.socket.connect

    def local_only(sock: socket.socket, address: Any) -> Any:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            host = str(address[0])
            if not (host.startswith("127.") or host in ("::1", "localhost")):
                raise AssertionError(f"network call to {address} during a test")
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", local_only)
    return wandb_dir


def teardown_wandb() -> None:
    """Forget wandb's process-wide setup (it caches settings read from the environment)."""
    import wandb

    wandb.teardown()


def records(path: str | os.PathLike[str]) -> Iterator[Any]:
    """Every ``wandb_internal_pb2.Record`` in a ``.wandb`` file, in order."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = Path(path).read_bytes()
    ident, magic, _version = _HEADER.unpack_from(data)
    assert (ident, magic) == (b":W&B", 0xBEE1), f"{path}: not a W&B record log"
    pos, pending = _HEADER.size, b""
    while pos + _RECORD.size <= len(data):
        left = _BLOCK - pos % _BLOCK
        if left < _RECORD.size:  # block trailer
            pos += left
            continue
        crc, length, kind = _RECORD.unpack_from(data, pos)
        if (crc, length, kind) == (0, 0, 0):
            pos += left  # zero padding to the end of the block
            continue
        if pos + _RECORD.size + length > len(data):
            break  # the writer is still writing this record
        payload = data[pos + _RECORD.size: pos + _RECORD.size + length]
        assert zlib.crc32(payload, zlib.crc32(bytes([kind]))) == crc, f"{path}: bad CRC at byte {pos}"
        pos += _RECORD.size + length
        if kind == 1:  # FULL
            yield pb.Record.FromString(payload)
        elif kind == 2:  # FIRST
            pending = payload
        elif kind == 3:  # MIDDLE
            pending += payload
        elif kind == 4:  # LAST
            yield pb.Record.FromString(pending + payload)
            pending = b""


def run_dirs(wandb_dir: Path) -> list[Path]:
    """The offline run directories under ``WANDB_DIR``, oldest first, each complete (:func:`wait_finished`)."""
    dirs = list((wandb_dir / "wandb").glob("offline-run-*"))
    for d in dirs:
        wait_finished(d)
    return sorted(dirs, key=lambda d: (_start(d), d.name))


def run_file(run_dir: Path) -> Path:
    (found,) = run_dir.glob("run-*.wandb")
    return found


def _start(run_dir: Path) -> tuple[int, int]:
    for rec in records(run_file(run_dir)):
        if rec.WhichOneof("record_type") == "run":
            return rec.run.start_time.seconds, rec.run.start_time.nanos
    return 0, 0


def wait_finished(run_dir: Path, timeout: float = 20.0) -> None:
    """Wait until the run's log has its ``exit`` record: wandb-core writes the log
    in its own process and may still be flushing when ``run.finish()`` returns."""
    deadline = time.monotonic() + timeout
    while not any(r.WhichOneof("record_type") == "exit" for r in records(run_file(run_dir))):
        assert time.monotonic() < deadline, f"{run_dir}: no exit record after {timeout} s"
        time.sleep(0.05)


def of_type(run_dir: Path, kind: str) -> list[Any]:
    """The records of one type (``"history"``, ``"artifact"``, ``"run"``, ...) of a run, in order."""
    return [getattr(r, kind) for r in records(run_file(run_dir)) if r.WhichOneof("record_type") == kind]


def history(run_dir: Path) -> list[dict[str, Any]]:
    """Each ``run.log`` row of a run as ``{key: value}`` (``_step`` included)."""
    rows = []
    for h in of_type(run_dir, "history"):
        rows.append({"/".join(item.nested_key) or item.key: json.loads(item.value_json) for item in h.item})
    return rows


# -- the server after `wandb sync` -----------------------------------------------------------

@dataclass
class Version:
    """One artifact version as the server stores it."""

    entity: str
    project: str
    name: str
    index: int
    type: str
    digest: str
    metadata: dict[str, Any]
    entries: list[Any]
    aliases: list[str] = field(default_factory=list)


class OfflineServer:
    """The W&B server's artifact state after syncing the offline runs under ``wandb_dir``."""

    def __init__(self, wandb_dir: Path) -> None:
        self.wandb_dir = wandb_dir
        self.synced: set[Path] = set()
        self.collections: dict[tuple[str, str, str], list[Version]] = {}

    def sync(self) -> None:
        """Take in the artifacts of runs not synced yet, in the order they ran."""
        for run_dir in run_dirs(self.wandb_dir):
            if run_dir in self.synced:
                continue
            self.synced.add(run_dir)
            for rec in of_type(run_dir, "artifact"):
                self._commit(rec)

    def _commit(self, rec: Any) -> None:
        versions = self.collections.setdefault((rec.entity, rec.project, rec.name), [])
        version = next((v for v in versions if v.digest == rec.digest), None)
        if version is None:  # W&B keeps one version per content digest
            version = Version(rec.entity, rec.project, rec.name, len(versions), rec.type, rec.digest,
                              json.loads(rec.metadata or "{}"), list(rec.manifest.contents))
            versions.append(version)
        for alias in [*rec.aliases, "latest"]:
            self.move_alias(versions, alias, version)

    @staticmethod
    def move_alias(versions: list[Version], alias: str, to: Version) -> None:
        for v in versions:
            if alias in v.aliases:
                v.aliases.remove(alias)
        to.aliases.append(alias)


def _only_defaults(**given: Any) -> None:
    """The fakes take every parameter of the real methods (their signatures are tested
    against wandb's) but emulate only the defaults of some: anything else fails the test."""
    used = {k: v for k, v in given.items() if v not in (None, False)}
    if used:
        raise NotImplementedError(f"the W&B fake does not emulate {used}")


class FakeArtifact:
    """What ``wandb.Api().artifact(...)`` returns, for the attributes WandbBackend uses."""

    def __init__(self, server: OfflineServer, v: Version) -> None:
        self._server, self._v = server, v
        self.name = f"{v.name}:v{v.index}"
        self.version = f"v{v.index}"
        self.type = v.type
        self.metadata = dict(v.metadata)
        self.aliases = list(v.aliases)
        self.created_at = ""
        self.downloads: list[str] = []

    def save(self, project: str | None = None, settings: Any = None) -> None:
        _only_defaults(project=project, settings=settings)
        versions = self._server.collections[(self._v.entity, self._v.project, self._v.name)]
        for alias in self.aliases:
            if alias not in self._v.aliases:
                OfflineServer.move_alias(versions, alias, self._v)

    def download(self, root: str | None = None, allow_missing_references: bool = False,
                 skip_cache: bool | None = None, path_prefix: str | None = None,
                 multipart: bool | None = None) -> str:
        _only_defaults(allow_missing_references=allow_missing_references, skip_cache=skip_cache,
                       path_prefix=path_prefix, multipart=multipart)
        target = Path(root or os.path.join(os.environ["WANDB_ARTIFACT_DIR"], self.name))
        for entry in self._v.entries:
            if entry.local_path:
                (target / entry.path).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(entry.local_path, target / entry.path)
        self.downloads.append(str(target))
        return str(target)


class FakeApi:
    """``wandb.Api()`` answered by an :class:`OfflineServer` (syncs before every answer)."""

    def __init__(self, server: OfflineServer, entity: str = "default-entity") -> None:
        self.server, self.default_entity = server, entity
        self.calls: list[tuple[str, str]] = []

    def _split(self, path: str) -> tuple[str, str, str]:
        parts = path.split("/")
        if len(parts) == 3:
            return parts[0], parts[1], parts[2]
        if len(parts) == 2:
            return self.default_entity, parts[0], parts[1]
        return self.default_entity, "uncategorized", parts[0]

    def artifact(self, name: str, type: str | None = None) -> FakeArtifact:
        self.calls.append(("artifact", name))
        self.server.sync()
        entity, project, rest = self._split(name)
        coll, _, selector = rest.partition(":")
        selector = selector or "latest"
        if not any((e, p) == (entity, project) for e, p, _ in self.server.collections):
            raise ValueError(f"project {project!r} not found under entity {entity!r}")
        versions = self.server.collections.get((entity, project, coll), [])
        match = [v for v in versions if f"v{v.index}" == selector or selector in v.aliases]
        if not match:
            raise ValueError(f"artifact membership {rest!r} not found in {entity + '/' + project!r}")
        if type is not None and match[0].type != type:
            raise ValueError(f"type {type!r} specified but this artifact is of type {match[0].type!r}")
        return FakeArtifact(self.server, match[0])

    def artifacts(self, type_name: str, name: str, order: str | None = None, per_page: int = 50,
                  tags: list[str] | None = None, start: str | None = None) -> list[FakeArtifact]:
        _only_defaults(order=order, tags=tags, start=start)
        self.calls.append(("artifacts", name))
        self.server.sync()
        entity, project, coll = self._split(name)
        versions = self.server.collections.get((entity, project, coll))
        if not versions:
            raise ValueError(f"artifact collection {coll!r} not found in {entity + '/' + project!r}")
        return [FakeArtifact(self.server, v) for v in versions if v.type == type_name]

    def artifact_collection_exists(self, name: str, type: str) -> bool:
        self.calls.append(("artifact_collection_exists", name))
        self.server.sync()
        entity, project, coll = self._split(name)
        return any(v.type == type for v in self.server.collections.get((entity, project, coll), []))

    def artifact_type(self, type_name: str, project: str | None = None) -> Any:
        self.calls.append(("artifact_type", str(project)))
        self.server.sync()
        entity, proj, _ = self._split(f"{project}/x") if project else (self.default_entity, "uncategorized", "")
        names = sorted({n for (e, p, n), vs in self.server.collections.items()
                        if (e, p) == (entity, proj) and any(v.type == type_name for v in vs)})

        class _Type:
            def collections(self) -> list[Any]:
                return [type("Collection", (), {"name": n})() for n in names]

        return _Type()
