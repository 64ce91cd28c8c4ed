"""scripts/containers.sh: enroot's and pyxis' source tarballs come from a URL (here a local HTTP
server), a kit directory or the cache, and are used only when they match the pinned sha256;
`build` compiles both from what it fetched, installing nothing.

The tarballs served are the verified copies `scripts/containers.sh fetch` keeps in its cache
(filled by any earlier set-up that built enroot and pyxis, or by this module from the default
sources: a kit when one is given, else GitHub)."""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "containers.sh"
CACHE = Path("/var/tmp/nemotron-containers/sources")
ENROOT, PYXIS = "enroot-4.1.2.tar.gz", "pyxis-0.24.0.tar.gz"
# What the tarballs must hash to; the script pins the same values (the tests read them from
# there below and check they are these, so a changed pin is a changed test).
TAR_SHA256 = {ENROOT: "aa67095a002fef365e9404d8a336beeb4e5e36409a0e0b682bd7496861dea0d3",
              PYXIS: "b406327c172809248d6015a4c514a1ab7974a6a132b5e70b191d6ac5ab2523d0"}
SOURCE_VARS = ("NEMOTRON_ENROOT_SRC", "NEMOTRON_PYXIS_SRC", "NEMOTRON_CONTAINER_KIT", "NEMOTRON_CONTAINER_CACHE")


def _env(**over: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SOURCE_VARS}
    return env | over


def _containers(*args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          env=_env(**env), stdin=subprocess.DEVNULL)


def _tar_sha256(path: Path) -> str:
    return hashlib.sha256(gzip.decompress(path.read_bytes())).hexdigest()


@pytest.fixture(scope="module")
def pinned_sources() -> Path:
    """The cache holding both verified tarballs (fetched now when it does not)."""
    if not all((CACHE / name).is_file() for name in (ENROOT, PYXIS)):
        proc = _containers("fetch", timeout=300)
        if proc.returncode != 0:
            pytest.skip(f"no verified enroot/pyxis tarballs to serve: {proc.stderr.strip().splitlines()[-1]}")
    for name, sha in TAR_SHA256.items():
        assert _tar_sha256(CACHE / name) == sha, name
    return CACHE


class _Recorder(http.server.SimpleHTTPRequestHandler):
    def log_message(self, fmt: str, *args: object) -> None:
        self.server.requested.append(self.path)  # type: ignore[attr-defined]


@pytest.fixture
def http_dir(tmp_path: Path) -> Iterator[tuple[Path, str, list[str]]]:
    """(directory served, its base URL, the paths requested) of an HTTP server on loopback."""
    served = tmp_path / "served"
    served.mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Recorder, directory=str(served)))
    server.requested = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served, f"http://127.0.0.1:{server.server_address[1]}", server.requested  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def _error_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [ln for ln in proc.stderr.splitlines() if ln.strip()]


def test_the_script_pins_the_values_this_test_checks():
    text = SCRIPT.read_text()
    assert f"ENROOT_TAR_SHA256={TAR_SHA256[ENROOT]}" in text
    assert f"PYXIS_TAR_SHA256={TAR_SHA256[PYXIS]}" in text
    assert 'ENROOT_URL="https://github.com/NVIDIA/enroot/archive/refs/tags/v$ENROOT_VERSION.tar.gz"' in text
    assert 'PYXIS_URL="https://github.com/NVIDIA/pyxis/archive/refs/tags/v$PYXIS_VERSION.tar.gz"' in text


def test_download_from_a_url_is_verified_and_kept(pinned_sources, http_dir, tmp_path):
    served, url, requested = http_dir
    for name in (ENROOT, PYXIS):
        shutil.copy(pinned_sources / name, served / name)
    dest = tmp_path / "dest"
    proc = _containers("fetch", str(dest), NEMOTRON_ENROOT_SRC=f"{url}/{ENROOT}", NEMOTRON_PYXIS_SRC=f"{url}/{PYXIS}")
    assert proc.returncode == 0, proc.stderr
    assert sorted(requested) == [f"/{ENROOT}", f"/{PYXIS}"]
    assert sorted(p.name for p in dest.iterdir()) == [ENROOT, PYXIS]  # no temporary file left
    for name in (ENROOT, PYXIS):
        assert (dest / name).read_bytes() == (served / name).read_bytes()
    # a second fetch uses the verified copies: no download
    again = _containers("fetch", str(dest), NEMOTRON_ENROOT_SRC=f"{url}/{ENROOT}", NEMOTRON_PYXIS_SRC=f"{url}/{PYXIS}")
    assert again.returncode == 0 and len(requested) == 2, again.stderr


def test_a_tarball_with_another_sha256_is_refused_in_one_line(pinned_sources, http_dir, tmp_path):
    served, url, requested = http_dir
    # a real release tarball, but not the one pinned under this name
    shutil.copy(pinned_sources / PYXIS, served / ENROOT)
    dest = tmp_path / "dest"
    proc = _containers("fetch", str(dest), NEMOTRON_ENROOT_SRC=f"{url}/{ENROOT}")
    assert proc.returncode == 1
    lines = _error_lines(proc)
    assert requested == [f"/{ENROOT}"]
    assert len(lines) == 1, proc.stderr
    got = hashlib.sha256((served / ENROOT).read_bytes()).hexdigest()
    assert lines[0].startswith(f"[containers] error: {ENROOT} from {url}/{ENROOT}: sha256 {got} is not the pinned ")
    assert lines[0].endswith("; refused")
    assert list(dest.iterdir()) == []  # nothing unverified kept, not even under a temporary name


def test_a_corrupted_download_is_refused(pinned_sources, http_dir, tmp_path):
    served, url, _ = http_dir
    data = bytearray((pinned_sources / ENROOT).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (served / ENROOT).write_bytes(bytes(data))
    proc = _containers("fetch", str(tmp_path / "dest"), NEMOTRON_ENROOT_SRC=f"{url}/{ENROOT}")
    assert proc.returncode == 1
    assert len(_error_lines(proc)) == 1 and "refused" in proc.stderr


def test_an_unreachable_url_is_one_line(tmp_path):
    proc = _containers("fetch", str(tmp_path / "dest"), NEMOTRON_ENROOT_SRC="http://127.0.0.1:9/enroot.tar.gz")
    assert proc.returncode == 1
    lines = _error_lines(proc)
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"[containers] error: could not download {ENROOT} from http://127.0.0.1:9/enroot.tar.gz: curl: (7)")


def test_a_kit_directory_is_used_instead_of_downloading(pinned_sources, tmp_path):
    kit = tmp_path / "kit"
    kit.mkdir()
    for name in (ENROOT, PYXIS):
        shutil.copy(pinned_sources / name, kit / name)
    proc = _containers("fetch", str(tmp_path / "dest"), NEMOTRON_CONTAINER_KIT=str(kit))
    assert proc.returncode == 0, proc.stderr
    assert f"using {ENROOT} from {kit}/{ENROOT}" in proc.stdout and "downloading" not in proc.stdout
    assert sorted(p.name for p in (tmp_path / "dest").iterdir()) == [ENROOT, PYXIS]


def test_a_kit_without_the_tarball_is_one_line(tmp_path):
    proc = _containers("fetch", str(tmp_path / "dest"), NEMOTRON_CONTAINER_KIT=str(tmp_path / "empty-kit"))
    assert proc.returncode == 1
    assert _error_lines(proc) == [f"[containers] error: {ENROOT} not found at {tmp_path}/empty-kit/{ENROOT}"]


@pytest.mark.slow
def test_build_compiles_both_from_the_downloaded_sources_and_installs_nothing(pinned_sources, http_dir, tmp_path):
    served, url, requested = http_dir
    for name in (ENROOT, PYXIS):
        shutil.copy(pinned_sources / name, served / name)
    out = tmp_path / "out"
    installed = Path("/usr/local/lib/slurm/spank_pyxis.so")
    before = installed.stat().st_mtime_ns if installed.exists() else None
    proc = _containers("build", str(out), timeout=900,
                       NEMOTRON_ENROOT_SRC=f"{url}/{ENROOT}", NEMOTRON_PYXIS_SRC=f"{url}/{PYXIS}")
    assert proc.returncode == 0, proc.stderr
    assert sorted(requested) == [f"/{ENROOT}", f"/{PYXIS}"]
    stage = out / "stage"
    enroot = stage / "usr/local/bin/enroot"
    assert subprocess.run([str(enroot), "version"], capture_output=True, text=True).stdout.strip() == "4.1.2"
    # the paths baked into enroot are the installed ones, not the staging dir's
    assert str(stage) not in enroot.read_text() and "/etc/enroot" in enroot.read_text()
    for helper in ("enroot-nsenter", "enroot-switchroot", "enroot-mount", "enroot-makeself"):
        assert (stage / "usr/local/bin" / helper).is_file(), helper
    plugin = stage / "usr/local/lib/slurm/spank_pyxis.so"
    assert b"pyxis: version v0.24.0" in plugin.read_bytes()
    assert sorted(p.name for p in stage.iterdir()) == ["etc", "usr"]
    assert (installed.stat().st_mtime_ns if installed.exists() else None) == before
