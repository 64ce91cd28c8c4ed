"""nemo_runspec.files: bounded reads of regular files only, tree walks that cannot loop.

Real FIFOs, devices, sockets and symlink loops on the local file system; the
glob is checked against ``glob.glob`` on random loop-free trees (hypothesis).
"""

from __future__ import annotations

import glob as std_glob
import os
import socket
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nemo_runspec import files
from nemo_runspec.errors import ConfigError, LocalPathError


def _in_thread(fn, timeout: float = 10.0):
    """Run ``fn`` in a thread; fail (instead of hanging the suite) when it blocks."""
    box: dict = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"{fn} blocked for {timeout} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "train.py"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError) as info:
        _in_thread(lambda: files.read_bytes(fifo, what="config", error=ConfigError))
    assert str(info.value) == f"{fifo}: config is a FIFO (named pipe), not a regular file (give the path of a regular config)"


def test_fifo_with_a_writer_is_still_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "x.yaml"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR)  # a writer is there: a plain open would read from it
    try:
        with pytest.raises(LocalPathError, match="FIFO"):
            _in_thread(lambda: files.read_bytes(fifo))
    finally:
        os.close(writer)


@pytest.mark.parametrize(("path", "kind"), [("/dev/zero", "a character device"), ("/dev/null", "a character device")])
def test_devices_are_refused_before_reading(path: str, kind: str) -> None:
    with pytest.raises(LocalPathError) as info:
        _in_thread(lambda: files.read_bytes(path, what="script"))
    assert info.value.problem == f"script is {kind}, not a regular file"


def test_socket_directory_loop_and_dangling_link(tmp_path: Path) -> None:
    sock_path = tmp_path / "s.py"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    try:
        with pytest.raises(LocalPathError, match="socket"):
            _in_thread(lambda: files.read_bytes(sock_path))
    finally:
        sock.close()
    with pytest.raises(LocalPathError, match="is a directory, not a regular file"):
        files.read_bytes(tmp_path)
    (tmp_path / "loop.py").symlink_to("loop.py")
    with pytest.raises(LocalPathError, match="is a symlink loop"):
        files.read_bytes(tmp_path / "loop.py")
    (tmp_path / "gone.py").symlink_to("nowhere.py")
    with pytest.raises(LocalPathError, match=r"not found \(a symlink to nothing\)"):
        files.read_bytes(tmp_path / "gone.py")


def test_size_bound_and_head(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate(64 << 20)  # sparse: 64 MiB of zeros without writing them
    with pytest.raises(LocalPathError, match=r"too large to read \(64 MiB; the limit is 16 MiB\)"):
        files.read_bytes(big)
    assert files.read_bytes(big, limit=10, head=True) == b"\0" * 10
    small = tmp_path / "ok.txt"
    small.write_bytes(b"abc")
    assert files.read_bytes(small, limit=3) == b"abc"
    with pytest.raises(LocalPathError, match="too large"):
        files.read_bytes(small, limit=2)


def test_read_text_names_the_line_of_a_bad_byte(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_bytes(b"a: 1\nb: \xff\n")
    with pytest.raises(ConfigError) as info:
        files.read_text(p, what="config", error=ConfigError)
    assert info.value.line == 2 and "not UTF-8" in info.value.problem


def _tree_with_loops(root: Path) -> None:
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "x.py").write_text("")
    (root / "a" / "b" / "y.py").write_text("")
    (root / "a" / "up").symlink_to("..")
    (root / "a" / "b" / "self").symlink_to(".")
    (root / "a" / "b" / "top").symlink_to(root)


def test_walk_reports_each_loop_and_finishes(tmp_path: Path) -> None:
    _tree_with_loops(tmp_path)
    loops: list[files.TreeLoop] = []
    seen = _in_thread(lambda: [(d, sorted(n), sorted(f)) for d, n, f in files.walk(tmp_path, on_loop=loops.append)])
    assert {(lp.link, lp.target) for lp in loops} == {
        (str(tmp_path / "a" / "up"), str(tmp_path)),
        (str(tmp_path / "a" / "b" / "self"), str(tmp_path / "a" / "b")),
        (str(tmp_path / "a" / "b" / "top"), str(tmp_path)),
    }
    assert [d for d, _, _ in seen] == [str(tmp_path), str(tmp_path / "a"), str(tmp_path / "a" / "b")]
    with pytest.raises(files.TreeLoop):
        list(files.walk(tmp_path))


def test_walk_follows_symlinked_directories_that_are_not_loops(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "f.bin").write_text("x")
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "linked").symlink_to(tmp_path / "data")
    (tmp_path / "tree" / "again").symlink_to(tmp_path / "data")  # the same dir twice is no loop
    got = sorted(os.path.join(d, f) for d, _, fs in files.walk(tmp_path / "tree") for f in fs)
    assert got == [str(tmp_path / "tree" / "again" / "f.bin"), str(tmp_path / "tree" / "linked" / "f.bin")]


def test_glob_with_loops_raises_or_skips(tmp_path: Path) -> None:
    _tree_with_loops(tmp_path)
    with pytest.raises(files.TreeLoop):
        _in_thread(lambda: files.glob(f"{tmp_path}/**/*.py"))
    got = _in_thread(lambda: files.glob(f"{tmp_path}/**/*.py", on_loop=lambda _: None))
    assert got == [str(tmp_path / "a" / "b" / "y.py"), str(tmp_path / "a" / "x.py")]


_NAMES = st.sampled_from(["a", "b", ".h", "x.py", "y.txt", "[z]", "sp ace", "é"])
_PATTERN_PARTS = st.sampled_from(["**", "*", "*.py", "?", "a", ".h", "[ab]", "[!a]*", "x.py", "é"])


@st.composite
def _trees(draw) -> list[tuple[str, ...]]:
    paths = draw(st.lists(st.lists(_NAMES, min_size=1, max_size=4).map(tuple), max_size=12))
    # a name cannot be both a file and a directory: the shorter path wins
    out: list[tuple[str, ...]] = []
    for p in sorted(set(paths), key=len):
        if not any(p[: len(q)] == q for q in out):
            out.append(p)
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=_trees(), pattern=st.lists(_PATTERN_PARTS, min_size=1, max_size=4), link=st.booleans())
def test_glob_matches_the_standard_glob_on_trees_without_loops(tmp_path_factory, tree, pattern, link) -> None:
    root = tmp_path_factory.mktemp("g")
    for parts in tree:
        target = root.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("")
    if link:  # a symlinked directory elsewhere: both globs follow it
        outside = tmp_path_factory.mktemp("o")
        (outside / "a").mkdir()
        (outside / "a" / "x.py").write_text("")
        if not (root / "lnk").exists():
            (root / "lnk").symlink_to(outside)
    full = os.path.join(str(root), *pattern)
    # (glob.glob("FILE/**") yields "FILE/", a path that does not exist: left out)
    expected = sorted(p.rstrip("/") for p in std_glob.glob(full, recursive=True, include_hidden=True)
                      if os.path.lexists(p))
    assert files.glob(full) == sorted(set(expected))
