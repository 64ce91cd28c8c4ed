"""Leftovers of killed runs are removed by the next run (nemo_runspec.runtime.stale)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from nemo_runspec.runtime.stale import is_stale, pid_alive, sweep, writer_pid
from nemo_runspec.spec.models import Runspec, RunspecResources, RunspecRun


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_writer_pid_and_liveness():
    assert writer_pid(".a.tar.gz.123.tmp") == 123
    assert writer_pid("nemotron-dryrun-456-k2j") == 456
    assert writer_pid(".nemotron-submitting.789") == 789
    assert writer_pid("a.tar.gz") is None
    assert pid_alive(os.getpid()) and not pid_alive(_dead_pid())


def test_sweep_removes_only_leftovers_of_dead_writers(tmp_path):
    dead, alive = _dead_pid(), os.getppid()
    stale_file = tmp_path / f".x.tar.gz.{dead}.tmp"
    stale_dir = tmp_path / f"nemotron-dryrun-{dead}-abc"
    live_file = tmp_path / f".y.tar.gz.{alive}.tmp"
    mine = tmp_path / f".z.tar.gz.{os.getpid()}.tmp"
    unnamed = tmp_path / "notes.tmp"
    stale_file.write_text("x")
    stale_dir.mkdir()
    (stale_dir / "inner").write_text("x")
    for p in (live_file, mine, unnamed):
        p.write_text("keep")
    removed = sweep(tmp_path.iterdir())
    assert sorted(removed) == sorted([stale_file, stale_dir])
    assert live_file.exists() and mine.exists() and unnamed.exists()
    assert not is_stale(live_file)


def test_archive_of_a_killed_packager_is_removed_by_the_next_build(tmp_path):
    """SIGKILL while an archive is being written leaves `.NAME.PID.tmp` in the
    package cache; the next cached build removes it."""
    cache = tmp_path / "cache"
    src = tmp_path / "src"
    src.mkdir()
    (src / "big.bin").write_bytes(os.urandom(1 << 20))
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from nemo_runspec.packaging._archive import DeterministicTar
        with DeterministicTar(Path({str(cache)!r}) / "abc.tar.gz") as tar:
            print("writing", flush=True)
            time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "writing"
    leftovers = list(cache.glob(".*.tmp"))
    assert len(leftovers) == 1
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert leftovers[0].exists()  # nothing cleaned it up

    from nemo_runspec.packaging.cache import build_cached
    from nemo_runspec.packaging.manifest import PackagingPlan

    def build(target: Path) -> PackagingPlan:
        target.write_bytes(b"archive")
        return PackagingPlan(kind="pattern", reason="test")

    build_cached("fp1", tmp_path / "job" / "code.tar.gz", build, directory=cache)
    assert not leftovers[0].exists()
    assert (tmp_path / "job" / "code.tar.gz").read_bytes() == b"archive"


def test_experiment_dir_of_a_killed_submission_is_removed(tmp_path):
    from nemo_runspec.slurm.submission import SUBMITTING, sweep_unsubmitted

    dead = _dead_pid()
    killed = tmp_path / "experiments" / "demo" / "demo_1"
    killed.mkdir(parents=True)
    (killed / f"{SUBMITTING}.{dead}").touch()
    (killed / "demo_sbatch.sh").write_text("#!/bin/bash\n")
    running = tmp_path / "experiments" / "demo" / "demo_2"
    running.mkdir()
    (running / f"{SUBMITTING}.{os.getppid()}").touch()
    done = tmp_path / "experiments" / "demo" / "demo_3"
    done.mkdir()
    (done / "demo_sbatch.sh").write_text("#!/bin/bash\n")
    assert sweep_unsubmitted(tmp_path) == [str(killed)]
    assert not killed.exists() and running.exists() and done.exists()


def test_dry_run_render_leaves_no_dir_and_sweeps_killed_ones(tmp_path, monkeypatch):


    import nemo_run as run

    from nemo_runspec.slurm import prepare_job, render_sbatch

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    stale = tmp_path / f"nemotron-dryrun-{_dead_pid()}-xyz"
    (stale / "experiments").mkdir(parents=True)
    spec = Runspec(name="demo/dry", script_path=Path("main.py"), run=RunspecRun(launch="direct"),
                   resources=RunspecResources(nodes=1, gpus_per_node=0))
    job = prepare_job(env={"executor": "slurm", "account": "a", "partition": "p", "container_image": ""},
                      mode="batch", runspec=spec, packager=run.Packager(), script="main.py",
                      base_dir=tmp_path / "base", exp_id="demo-dry_1")
    start = time.time()
    assert "#SBATCH" in render_sbatch(job)
    assert list(tmp_path.iterdir()) == []  # its own render dir is gone, the stale one swept
    assert time.time() - start < 60
