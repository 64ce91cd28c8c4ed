"""Tests for job dirs: unique names, atomic staging, atomic writes, NEMOTRON_HOME."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from nemo_runspec.config import atomic_write_text, generate_job_dir, slugify, staged_job_dir
from nemo_runspec.errors import ExecutionError

NAME = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{8}$")


def test_name_layout_and_not_created(tmp_path: Path) -> None:
    d = generate_job_dir("nano3/Pretrain", tmp_path)
    assert d.parent == tmp_path / "nano3-pretrain"
    assert NAME.match(d.name), d.name
    assert not d.exists()


@pytest.mark.parametrize(
    "name, slug",
    [("nano3/pretrain", "nano3-pretrain"), ("A B//c", "a-b-c"), ("../x", "x"), ("///", "job"), ("x.y_z-1", "x.y_z-1")],
)
def test_slugify(name: str, slug: str) -> None:
    assert slugify(name) == slug


_CHILD = """
import json, sys
from nemo_runspec.config import generate_job_dir, staged_job_dir
names = []
for _ in range({n}):
    d = generate_job_dir("recipe/x", sys.argv[1])
    with staged_job_dir(d) as tmp:
        (tmp / "who").write_text(str(d))
    names.append(str(d))
print(json.dumps(names))
"""


def test_unique_across_threads_and_processes(tmp_path: Path) -> None:
    """1,200 job dirs generated and created within a few seconds: no collision."""
    per_proc, procs, threads, per_thread = 150, 4, 8, 75
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD.format(n=per_proc), str(tmp_path)],
            stdout=subprocess.PIPE, text=True,
        )
        for _ in range(procs)
    ]
    barrier = threading.Barrier(threads)

    def worker(_: int) -> list[str]:
        barrier.wait()
        out = []
        for _ in range(per_thread):
            d = generate_job_dir("recipe/x", tmp_path)
            with staged_job_dir(d) as tmp:
                (tmp / "who").write_text(str(d))
            out.append(str(d))
        return out

    with ThreadPoolExecutor(threads) as pool:
        thread_names = [n for chunk in pool.map(worker, range(threads)) for n in chunk]
    proc_names = []
    for child in children:
        stdout, _ = child.communicate(timeout=120)
        assert child.returncode == 0
        proc_names += json.loads(stdout)

    names = thread_names + proc_names
    total = procs * per_proc + threads * per_thread
    assert len(names) == total
    assert len(set(names)) == total
    created = sorted((tmp_path / "recipe-x").iterdir())
    assert len(created) == total  # every one was created, none replaced another
    for d in created:
        assert (d / "who").read_text() == str(d)


def test_staged_job_dir_success(tmp_path: Path) -> None:
    final = tmp_path / "jobs" / "r" / "20250101-000000-abcdef01"
    with staged_job_dir(final) as tmp:
        assert tmp.parent == final.parent
        assert tmp.name.startswith(".")
        assert not final.exists()  # nothing visible until the block succeeds
        (tmp / "job.yaml").write_text("a: 1\n")
        (tmp / "sub").mkdir()
        (tmp / "sub" / "f").write_text("x")
    assert (final / "job.yaml").read_text() == "a: 1\n"
    assert (final / "sub" / "f").read_text() == "x"
    assert [p.name for p in final.parent.iterdir()] == [final.name]  # no staging leftovers


def test_staged_job_dir_failure_leaves_nothing(tmp_path: Path) -> None:
    final = tmp_path / "r" / "job1"
    with pytest.raises(RuntimeError, match="boom"):
        with staged_job_dir(final) as tmp:
            (tmp / "job.yaml").write_text("half")
            raise RuntimeError("boom")
    assert not final.exists()
    assert list(final.parent.iterdir()) == []


def test_staged_job_dir_cleans_up_on_keyboard_interrupt(tmp_path: Path) -> None:
    final = tmp_path / "r" / "job2"
    with pytest.raises(KeyboardInterrupt):
        with staged_job_dir(final) as tmp:
            (tmp / "x").write_text("1")
            raise KeyboardInterrupt
    assert list(final.parent.iterdir()) == []


def test_staged_job_dir_refuses_existing(tmp_path: Path) -> None:
    final = tmp_path / "r" / "job3"
    final.mkdir(parents=True)
    with pytest.raises(ExecutionError, match="job directory already exists"):
        with staged_job_dir(final):
            pass


def test_staged_job_dir_never_replaces_dir_created_meanwhile(tmp_path: Path) -> None:
    final = tmp_path / "r" / "job4"
    with pytest.raises(ExecutionError, match="job directory already exists") as err:
        with staged_job_dir(final) as tmp:
            (tmp / "mine").write_text("1")
            final.mkdir()  # someone else took the name (empty dir: a plain rename would replace it)
    assert err.value.path == str(final)
    assert list(final.iterdir()) == []  # the other dir is untouched
    assert sorted(p.name for p in final.parent.iterdir()) == ["job4"]


def test_atomic_write_text_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "f.yaml"
    atomic_write_text(target, "one")
    atomic_write_text(target, "two")
    assert target.read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["f.yaml"]


def test_atomic_write_failure_keeps_old_content(tmp_path: Path) -> None:
    target = tmp_path / "f.yaml"
    atomic_write_text(target, "old")
    with pytest.raises(TypeError):
        atomic_write_text(target, None)  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.yaml"]
