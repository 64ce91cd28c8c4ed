"""Concurrent publishers of one artifact, in real processes, on a real local directory.

Every test starts its publishers together (a barrier) and then checks the registry
as a reader would: every alias present and pointing at its own publisher's
version, versions 1..N with no gap or duplicate, ``latest`` on the highest,
each copied payload under its own version, and no leftover file.
"""

from __future__ import annotations

import errno
import json
import multiprocessing as mp
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from nemo_runspec.artifacts.errors import ArtifactError, ArtifactNotFoundError
from nemo_runspec.artifacts.fsspec_backend import FsspecBackend
from nemo_runspec.artifacts.registry import ArtifactRegistry

N = 16
CTX = mp.get_context("fork")


def _sources(tmp_path: Path, n: int) -> list[Path]:
    out = []
    for i in range(n):
        d = tmp_path / f"src{i}"
        d.mkdir()
        (d / "who").write_text(str(i))
        out.append(d)
    return out


def _publish(root: str, i: int, src: str, copy: bool, barrier, queue, refuse_flock: bool) -> None:
    if refuse_flock:  # as on Lustre mounted without -o flock
        import fcntl

        def refuse(fd, op):
            raise OSError(errno.ENOLCK, "No locks available")

        fcntl.flock = refuse
    reg = ArtifactRegistry(root)
    barrier.wait(30)
    try:
        art = reg.publish("ds", src, aliases=("latest", f"a{i}"), copy=copy, metadata={"i": i})
        queue.put((i, art.version, list(art.aliases), None))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which fails the test
        queue.put((i, None, None, f"{type(exc).__name__}: {exc}"))


def _read_while_publishing(root: str, stop, queue) -> None:
    """Resolve ``latest`` and load every version until told to stop; report what went wrong."""
    reg = ArtifactRegistry(root)
    seen, problems = [], []
    while not stop.is_set():
        try:
            seen.append(reg.resolve("ds:latest").version)
            reg.versions("ds")
        except ArtifactNotFoundError:
            if seen:
                problems.append("ds vanished after it was seen")
        except Exception as exc:  # noqa: BLE001 - any other error is the finding
            problems.append(f"{type(exc).__name__}: {exc}")
    if seen != sorted(seen):
        problems.append("latest moved backwards")
    queue.put((len(seen), problems))


def _run_publishers(root: Path, sources: list[Path], *, refuse_flock: bool = False,
                    reader_report: list | None = None) -> dict[int, tuple]:
    barrier = CTX.Barrier(len(sources))
    queue, reader_queue, stop = CTX.Queue(), CTX.Queue(), CTX.Event()
    procs = [CTX.Process(target=_publish, args=(str(root), i, str(src), i % 2 == 1, barrier, queue, refuse_flock))
             for i, src in enumerate(sources)]
    reader = CTX.Process(target=_read_while_publishing, args=(str(root), stop, reader_queue))
    if reader_report is not None:
        reader.start()
    for p in procs:
        p.start()
    results = {}
    for _ in procs:
        i, version, aliases, error = queue.get(timeout=120)
        results[i] = (version, aliases, error)
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    if reader_report is not None:
        stop.set()
        reader_report.extend(reader_queue.get(timeout=60))
        reader.join(30)
    return results


def _assert_consistent(root: Path, results: dict[int, tuple]) -> None:
    n = len(results)
    errors = {i: e for i, (_, _, e) in results.items() if e}
    assert not errors
    versions = {i: v for i, (v, _, _) in results.items()}
    assert sorted(versions.values()) == list(range(1, n + 1))

    d = root / "ds"
    on_disk = json.loads((d / "aliases.json").read_text())
    assert on_disk == {"latest": n, **{f"a{i}": v for i, v in versions.items()}}
    reg = ArtifactRegistry(root)
    assert reg.resolve("ds:latest").version == n
    for i, v in versions.items():
        art = reg.resolve(f"ds:a{i}")
        assert art.version == v and art.metadata == {"i": i}
        if i % 2:  # copied: the payload under vN is this publisher's own
            assert Path(art.path) == d / f"v{v}"
            assert (d / f"v{v}" / "who").read_text() == str(i)
        else:
            assert art.path.endswith(f"src{i}")
    expected = {".lock", "aliases.json", *(f"v{v}.json" for v in range(1, n + 1)),
                *(f"v{v}" for i, v in versions.items() if i % 2)}
    leftovers = {p.name for p in d.iterdir()} - expected
    assert not leftovers
    for i, (v, aliases, _) in results.items():  # what each publish reports it set
        assert aliases == [f"a{i}", "latest"], (i, v, aliases)


def test_concurrent_publishes_keep_every_alias_and_number(tmp_path):
    root = tmp_path / "registry"
    reader: list = []
    _assert_consistent(root, _run_publishers(root, _sources(tmp_path, N), reader_report=reader))
    reads, problems = reader
    assert problems == [] and reads > 0  # a reader never saw a half-published version


def test_concurrent_publishes_where_flock_is_refused(tmp_path):
    """A filesystem without flock: the lock falls back to an O_EXCL lease file."""
    root = tmp_path / "registry"
    results = _run_publishers(root, _sources(tmp_path, 12), refuse_flock=True)
    _assert_consistent(root, results)
    assert not (root / "ds" / ".lease").exists()


def _cli(rl_dir: Path, *args: str, env: dict[str, str], cwd: Path) -> subprocess.Popen:
    code = "import sys\nfrom nemotron.cli.bin.nemotron import main\nsys.exit(main())"
    return subprocess.Popen([sys.executable, "-c", code, "nano3", "data", "import", "rl", str(rl_dir), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)


@pytest.fixture
def rl_dir(tmp_path: Path) -> Path:
    d = tmp_path / "rl"
    d.mkdir()
    line = json.dumps({"messages": [{"role": "user", "content": "What is 2 + 2?"}], "answer": 4}) + "\n"
    (d / "train.jsonl").write_text(line * 3)
    (d / "validation.jsonl").write_text(line)
    return d


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NEMOTRON_ENV_FILE", "NEMOTRON_DEBUG")}
    return {**env, "NEMOTRON_ARTIFACTS_ROOT": str(tmp_path / "registry"), "NEMOTRON_HOME": str(tmp_path / "home"),
            "COLUMNS": "200"}


def test_twelve_concurrent_data_imports(rl_dir, cli_env, tmp_path):
    """The reported case: 12 `nemotron nano3 data import rl PATH --alias aN` at once."""
    procs = {i: _cli(rl_dir, "--alias", f"a{i}", env=cli_env, cwd=tmp_path) for i in range(12)}
    versions = {}
    for i, proc in procs.items():
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        m = re.search(r"artifact: nano3-rl-data:v(\d+)  \(aliases: (.*)\)", out)
        assert m and m.group(2) == f"a{i}, latest", out
        versions[i] = int(m.group(1))
    assert sorted(versions.values()) == list(range(1, 13))
    aliases = json.loads((tmp_path / "registry" / "nano3-rl-data" / "aliases.json").read_text())
    assert aliases == {"latest": 12, **{f"a{i}": v for i, v in versions.items()}}


def _hold_lock(root: str, held, release) -> None:
    from nemo_runspec.artifacts.locking import RegistryLock

    Path(root, "ds").mkdir(parents=True, exist_ok=True)
    with RegistryLock(None, f"{root}/ds", local=True):
        held.set()
        release.wait(60)


def test_lock_wait_times_out_with_the_holder_named(tmp_path):
    root = tmp_path / "registry"
    src = _sources(tmp_path, 1)[0]
    held, release = CTX.Event(), CTX.Event()
    holder = CTX.Process(target=_hold_lock, args=(str(root), held, release))
    holder.start()
    try:
        assert held.wait(30)
        reg = ArtifactRegistry(backend=FsspecBackend(root, lock_timeout=0.5))
        t0 = time.monotonic()
        with pytest.raises(ArtifactError) as info:
            reg.publish("ds", src, copy=True)
        assert time.monotonic() - t0 < 10
        msg = str(info.value)
        assert "\n" not in msg
        assert msg.startswith(f"{root}/ds/.lock: timed out after 0.5s waiting for the registry lock "
                              f"(held by pid {holder.pid} on ")
        assert "; nothing was published (" in msg
        assert reg.list() == [] and sorted(p.name for p in (root / "ds").iterdir()) == [".lock"]
    finally:
        release.set()
        holder.join(30)
    assert reg.publish("ds", src, copy=True).version == 1  # the kernel dropped the lock with its holder


def test_remote_store_breaks_a_stale_lease_and_waits_on_a_fresh_one(tmp_path):
    """memory:// stands for a remote store: no flock, a lease file made with a create-only write."""
    root = f"memory://reg-{uuid.uuid4().hex}"
    backend = FsspecBackend(root, lock_timeout=0.5)
    reg = ArtifactRegistry(backend=backend)
    src = _sources(tmp_path, 1)[0]
    lease = f"{backend.root}/ds/.lease"
    backend.fs.pipe_file(lease, json.dumps({"owner": "pid 1 on gone", "token": "x",
                                            "time": time.time() - 3600}).encode())
    assert reg.publish("ds", src, aliases=("latest", "a")).version == 1
    assert not backend.fs.exists(lease)

    backend.fs.pipe_file(lease, json.dumps({"owner": "pid 2 on busy", "token": "y", "time": time.time()}).encode())
    with pytest.raises(ArtifactError, match=rf"^memory://{backend.root}/ds/\.lease: timed out .*\(held by pid 2 on busy\)"):
        reg.publish("ds", src, aliases=("latest", "b"))
    assert [a.version for a in reg.versions("ds")] == [1]
    assert reg.resolve("ds:latest").aliases == ("a", "latest")
