"""The local worker pool (runner.ForkPool): when it is chosen, same bytes as in process,
failures named by shard, and no worker outliving the run (errors, Ctrl-C, a killed driver).

Byte identity with Ray's workers: test_pretrain.py (the module with a Ray instance).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from nemo_runspec.errors import ConfigError, ExecutionError
from nemotron.data_prep import runner
from nemotron.data_prep.rl import run_rl
from nemotron.data_prep.sharding import Shard
from nemotron.data_prep.sources import Segment

ROOT = Path(__file__).resolve().parents[3]


def tree_hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".done" not in p.parts}


def shards(n: int, size: int = 1000) -> list[Shard]:
    """``n`` shards, each reading its own input file of ``size`` bytes."""
    return [Shard(i, (Segment(f"/in/{i}.jsonl", "jsonl", 0, 10, 0, 0, size, "d"),)) for i in range(n)]


def children() -> list[int]:
    """Live (not zombie) child processes of this process, but for the lifeline's watcher
    (an earlier test in this process may have started a local child through it)."""
    from nemo_runspec.runtime import lifeline

    out: list[int] = []
    for tid in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            kids = Path(f"/proc/{os.getpid()}/task/{tid}/children").read_text().split()
        except OSError:
            continue
        for k in kids:
            try:
                state = Path(f"/proc/{k}/stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z" and int(k) != lifeline.watcher_pid():
                    out.append(int(k))
            except OSError:
                continue
    return out


@pytest.fixture(autouse=True)
def _local(monkeypatch):
    for var in ("RAY_ADDRESS", runner.RAY_ENV, "NEMOTRON_DATA_PREP_IN_PROCESS_BYTES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(runner, "_ray_running", lambda: False)


def test_choose_mode(monkeypatch):
    big = shards(8, size=runner.IN_PROCESS_BYTES // 8)
    assert runner.choose_mode(big, 2) == ("pool", 2)
    assert runner.choose_mode(big, 2, todo=1) == ("inline", 1)  # one shard left: no pool for it
    assert runner.choose_mode(big, 1) == ("inline", 1)
    assert runner.choose_mode(big, 0) == ("inline", 1)
    assert runner.choose_mode(big, 16) == ("pool", 2)  # 1 MiB of input: two workers will do
    assert runner.choose_mode(shards(8, size=1 << 20), 16) == ("pool", 8)  # never more workers than shards
    monkeypatch.setattr(runner, "_usable_cpus", lambda: 3)
    assert runner.choose_mode(shards(8, size=1 << 20), None) == ("pool", 3)  # workers unset: usable CPUs
    monkeypatch.setattr(runner, "_usable_cpus", lambda: 64)
    assert runner.choose_mode(shards(64, size=runner.IN_PROCESS_BYTES // 8), None) == ("pool", 16)  # 8 MiB
    assert runner.choose_mode(shards(8, size=10), None) == ("inline", 1)  # below the threshold
    monkeypatch.setenv("NEMOTRON_DATA_PREP_IN_PROCESS_BYTES", "0")
    assert runner.choose_mode(shards(64, size=10), None) == ("pool", 2)  # a tiny input, forced: two
    monkeypatch.delenv("NEMOTRON_DATA_PREP_IN_PROCESS_BYTES")
    monkeypatch.setenv(runner.RAY_ENV, "1")
    assert runner.choose_mode(big, 2) == ("ray", 0)
    assert runner.choose_mode(shards(8, size=10), 2) == ("inline", 1)  # small stays in process
    monkeypatch.delenv(runner.RAY_ENV)
    monkeypatch.setattr(runner.sys, "platform", "darwin")  # no fork there: Ray, as before the pool
    assert runner.choose_mode(big, 2) == ("ray", 0)
    monkeypatch.setattr(runner.sys, "platform", "linux")
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")  # a Ray cluster (the Slurm Ray job): always Ray
    assert runner.choose_mode(shards(8, size=10), None) == ("ray", 0)
    assert runner.choose_mode(big, 0) == ("inline", 1)


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_rl_pool_and_in_process_write_the_same_bytes(tmp_path, monkeypatch, capsys):
    _write(tmp_path / "a.jsonl", [{"prompt": f"p{i % 150}", "answer": "x"} for i in range(400)])
    out = tmp_path / "out"
    cfg = {"input": {"paths": [str(tmp_path / "a.jsonl")]}, "output_dir": str(out), "num_shards": 5,
           "split": "50,50", "workers": 0}
    run_rl(cfg)
    inline = tree_hashes(out)
    import shutil

    shutil.rmtree(out)
    monkeypatch.setenv("NEMOTRON_DATA_PREP_IN_PROCESS_BYTES", "0")
    done: list[str] = []
    run_rl({**cfg, "workers": 2}, on_shard_done=lambda s, r: done.append(s.name))
    assert "2 worker processes on this machine, without Ray" in capsys.readouterr().out
    assert tree_hashes(out) == inline and len(inline) > 5
    assert sorted(done) == [f"shard_{i:05d}" for i in range(5)]
    assert children() == []


def _ok(shard: Shard, params: dict, out_dir: str) -> dict:
    Path(out_dir, f"{shard.name}.txt").write_text(f"{shard.index} {os.getpid()}\n")
    return {"outputs": [f"{shard.name}.txt"], "records": 1, "pid": os.getpid()}


def _fails(shard: Shard, params: dict, out_dir: str) -> dict:
    if shard.index == params["bad"]:
        if params["how"] == "config":
            raise ConfigError("tokenizer.path does not exist", key="tokenizer.path")
        if params["how"] == "die":
            os._exit(3)
        if params["how"] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise ValueError("boom")
    time.sleep(0.05)
    return _ok(shard, params, out_dir)


def test_pool_runs_every_shard_once_on_several_workers(tmp_path):
    results = runner.run_shards(_ok, shards(6, 1 << 30), {}, tmp_path, workers=2)
    assert [r["outputs"] for r in results] == [[f"shard_{i:05d}.txt"] for i in range(6)]
    assert len({r["pid"] for r in results} - {os.getpid()}) == 2  # two workers, not this process
    assert children() == []
    again = runner.run_shards(_ok, shards(6, 1 << 30), {}, tmp_path, workers=2)  # all resumed
    assert [r["pid"] for r in again] == [r["pid"] for r in results]


@pytest.mark.parametrize(("how", "error", "text"), [
    ("config", ConfigError, "tokenizer.path does not exist"),  # as it is, like in process
    ("value", ExecutionError, "shard_00002 failed: boom$"),  # as the Ray path says it
    ("die", ExecutionError, r"shard_00002 failed: its worker process died \(exit code 3\)"),
    ("kill", ExecutionError, r"shard_00002 failed: its worker process died \(killed by signal 9\)"),
])
def test_a_failing_shard_stops_the_run_and_every_worker(tmp_path, how, error, text):
    with pytest.raises(error, match=text):
        runner.run_shards(_fails, shards(6, 1 << 30), {"bad": 2, "how": how}, tmp_path, workers=2)
    assert children() == []


DRIVER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from nemotron.data_prep import runner
    from nemotron.data_prep.sharding import Shard
    from nemotron.data_prep.sources import Segment

    def slow(shard, params, out_dir):
        tmp = Path(out_dir, f".{shard.name}.{os.getpid()}.tmp")
        tmp.write_text("partial")
        try:
            os.write(1, f"worker {os.getpid()}\\n".encode())  # one write: the two workers share stdout
            time.sleep(60)
        except BaseException:
            tmp.unlink()  # what the shard writers do on an interrupt
            raise
        return {"outputs": []}

    shards = [Shard(i, (Segment(f"/in/{i}", "jsonl", 0, 1, 0, 0, 1 << 30, "d"),)) for i in range(4)]
    runner.run_shards(slow, shards, {}, sys.argv[1], workers=2)
""")


def _start_driver(tmp_path: Path, started: list[subprocess.Popen]) -> tuple[subprocess.Popen, list[int]]:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", runner.RAY_ENV)}
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "out"), str(ROOT / "src")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    started.append(proc)
    workers = []
    for line in proc.stdout:
        if line.startswith("worker "):
            workers.append(int(line.split()[1]))
            if len(workers) == 2:
                break
    assert len(workers) == 2, proc.stderr.read()
    return proc, workers


def _gone(pids: list[int], within: float = 10.0) -> bool:
    deadline = time.time() + within
    while time.time() < deadline:
        alive = []
        for p in pids:
            try:
                state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                alive.append(p)
        if not alive:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def driver(tmp_path):
    started: list[subprocess.Popen] = []

    def start() -> tuple[subprocess.Popen, list[int]]:
        proc, workers = _start_driver(tmp_path, started)
        return proc, workers

    yield start
    for proc in started:  # whatever the test did: nothing of the driver's session survives it
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc (Linux)")
def test_ctrl_c_stops_the_workers_and_they_clean_up(tmp_path, driver):
    proc, workers = driver()
    os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
    _, err = proc.communicate(timeout=30)
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    assert _gone(workers)
    assert list((tmp_path / "out").glob(".*.tmp")) == []  # each busy worker removed its partial file


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc (Linux)")
def test_a_killed_driver_leaves_no_worker_behind(tmp_path, driver):
    proc, workers = driver()
    proc.kill()  # SIGKILL: no finally block runs in the driver
    proc.wait(timeout=10)
    assert _gone(workers)
