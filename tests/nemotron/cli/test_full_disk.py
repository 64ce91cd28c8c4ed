"""Issue 30, class 8: a full disk is an execution error (exit 1) naming the path and the disk.

Real tmpfs mounts filled to the brim: the training checkpoint (torch's own
writer said ``[enforce fail at inline_container.cc:672]``), data-prep output
(exit 2 before) and the local job dir. Each is one line with the file, the file
system's mount point and what is free, exit 1, and no half-written file left.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from nemo_runspec.errors import DiskFullError
from tests.nemotron_cli import NEMOTRON, job_errors

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


def _tmpfs(path: Path, size: str) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    return path


@pytest.fixture
def small_disk(tmp_path: Path):
    mnt = _tmpfs(tmp_path / "small", "64k")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=True)


def _fill(mnt: Path, leave: int = 0) -> None:
    """Fill ``mnt`` to the brim (``leave`` bytes short of it)."""
    fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    if leave:
        os.truncate(mnt / "filler", max(0, os.path.getsize(mnt / "filler") - leave))


def _cli(tmp: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(HOME=str(tmp), NEMOTRON_HOME=str(home), COLUMNS="200", NO_COLOR="1")
    return subprocess.run([str(NEMOTRON), *args], cwd=tmp, env=env, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    errors = job_errors(proc.stderr)
    assert len(errors) == 1 and "Traceback" not in proc.stderr and "enforce fail" not in proc.stderr, proc.stderr
    return errors[0]


def test_checkpoint_on_a_full_disk(small_disk: Path) -> None:
    torch = pytest.importorskip("torch")
    from nemotron.training.checkpoint import save_checkpoint

    state = {"step": 1, "weights": torch.zeros(64 * 1024)}  # 256 KiB: more than the disk
    with pytest.raises(DiskFullError) as exc:
        save_checkpoint(small_disk / "ckpt", state, 1)
    line = str(exc.value)
    assert line.startswith(f"{small_disk / 'ckpt' / 'step_00000001.pt'}: cannot write the checkpoint: "
                           f"No space left on device: the file system mounted at {small_disk} (")
    assert "free of 64.0 KiB) is full" in line
    assert not list((small_disk / "ckpt").iterdir())  # no half-written or temporary file


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    """A NEMOTRON_HOME with the tiny pretraining data published (real data prep)."""
    home = tmp_path_factory.mktemp("home")
    proc = _cli(home, "nano3", "data", "prep", "pretrain", "-c", "tiny", home=home)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return home


def test_training_on_a_full_disk_names_the_disk(tmp_path: Path, published: Path, small_disk: Path) -> None:
    line = _one_line(_cli(tmp_path, "nano3", "pretrain", "-c", "tiny", f"checkpoint.save={small_disk}/ckpt",
                          home=published))
    assert line.startswith(f"error: {small_disk}/ckpt/step_000000")
    assert f"cannot write the checkpoint: No space left on device: the file system mounted at {small_disk}" in line
    assert not [p for p in (small_disk / "ckpt").iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("stage", ["pretrain", "sft", "rl"])
def test_data_prep_on_a_full_disk_is_exit_1_naming_the_disk(tmp_path: Path, small_disk: Path, stage: str) -> None:
    _fill(small_disk, leave=12 * 1024)
    line = _one_line(_cli(tmp_path, "nano3", "data", "prep", stage, "-c", "tiny", home=small_disk))
    assert f"error: {small_disk}/" in line
    assert f"No space left on device: the file system mounted at {small_disk} (" in line
    assert "$NEMOTRON_HOME is " in line


def test_local_job_dir_on_a_full_disk(tmp_path: Path, small_disk: Path) -> None:
    script = tmp_path / "hello.py"
    script.write_text('# /// script\n# [tool.runspec]\n# name = "t/hello"\n# [tool.runspec.run]\n'
                      '# launch = "direct"\n# ///\nprint("hi")\n')
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "default.yaml").write_text("x: 1\n" + "# padding\n" * 2000)
    (small_disk / "jobs").mkdir()
    _fill(small_disk)
    line = _one_line(_cli(tmp_path, "run", str(script), home=small_disk))
    assert f"the file system mounted at {small_disk}" in line and "is full" in line
