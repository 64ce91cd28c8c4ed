"""A local run's processes never outlive the `nemotron` command that started them.

The real console script runs a recipe here (no profile). The recipe starts what
local work starts: a worker pool (forked, as the data prep's is), a grandchild in
the same process group, and one that leaves the group (``setsid``, as a daemon
would). Then the CLI is stopped: SIGTERM, SIGHUP, or SIGKILL, which it cannot
catch. Checked: every process of the run is gone within seconds, and the one that
escaped the group cannot publish its artifact afterwards, not even while the CLI
is still stopping the rest (the registry refuses a run whose command has ended or
has begun to stop it); the registry holds no version.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from nemo_runspec.artifacts.registry import ArtifactRegistry
from tests.processes import alive as _alive

NEMOTRON = Path(sys.executable).with_name("nemotron")

RECIPE = textwrap.dedent('''\
    # /// script
    # [tool.runspec]
    # name = "test/orphans"
    #
    # [tool.runspec.run]
    # launch = "direct"
    # ///
    import json, multiprocessing, os, subprocess, sys, time
    from pathlib import Path

    OUT = Path(os.environ["ORPHAN_DIR"])

    def work(_):
        time.sleep(120)

    if __name__ == "__main__":
        multiprocessing.set_start_method("fork")
        pool = multiprocessing.Pool(2)
        pool.map_async(work, range(2))
        sleeper = subprocess.Popen(["sleep", "120"])
        # leaves the process group and publishes once its parent is gone, as an orphan would.
        # It leaves before it runs a line of its own (setsid between fork and exec): an
        # os.setsid() in its code would keep it in the group while Python starts, and
        # stopping the group then would kill it before it could try to publish
        escaped = subprocess.Popen([sys.executable, "-c", (
            "import os, sys, time\\n"
            "while os.getppid() != 1 and os.path.exists(f'/proc/{os.getppid()}') and time.time() < 1e12:\\n"
            "    time.sleep(0.05)\\n"
            "    if os.getppid() != int(sys.argv[1]): break\\n"
            "from nemo_runspec.artifacts.registry import ArtifactRegistry\\n"
            "from pathlib import Path\\n"
            "out = Path(sys.argv[2])\\n"
            "try:\\n"
            "    ArtifactRegistry(os.environ['NEMOTRON_ARTIFACTS_ROOT']).publish('orphan-model', str(out))\\n"
            "    (out / 'published').touch()\\n"
            "except Exception as exc:\\n"
            "    (out / 'refused').write_text(str(exc))\\n"
        ), str(os.getpid()), str(OUT)], start_new_session=True)
        pids = [os.getpid(), sleeper.pid, *(p.pid for p in pool._pool)]
        (OUT / "pids.json").write_text(json.dumps({"group": pids, "escaped": escaped.pid}))
        time.sleep(120)
''')


@pytest.fixture
def run_dir(tmp_path: Path) -> dict:
    script = tmp_path / "orphans.py"
    script.write_text(RECIPE)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "default.yaml").write_text("x: 1\n")
    out = tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), NEMOTRON_ARTIFACTS_ROOT=str(tmp_path / "reg"),
               ORPHAN_DIR=str(out), NEMOTRON_ENV_FILE=str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    yield {"script": script, "out": out, "env": env, "tmp": tmp_path}
    pids = out / "pids.json"
    if pids.exists():  # never leave a process of this test behind, whatever happened
        data = json.loads(pids.read_text())
        for pid in [*data["group"], data["escaped"]]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP],
                         ids=lambda s: signal.Signals(s).name)
def test_stopping_the_cli_stops_every_process_of_the_run_and_nothing_is_published(run_dir, sig):
    proc = subprocess.Popen([str(NEMOTRON), "run", str(run_dir["script"])], env=run_dir["env"], cwd=run_dir["tmp"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    pids_file = run_dir["out"] / "pids.json"
    deadline = time.monotonic() + 120
    while not pids_file.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.1)
    pids = json.loads(pids_file.read_text())
    os.kill(proc.pid, sig)  # the CLI alone, as `kill PID` or a scheduler does
    _, err = proc.communicate(timeout=60)
    err = err.decode(errors="replace")
    if sig != signal.SIGKILL:
        assert proc.returncode == 128 + sig, err[-2000:]
    deadline = time.monotonic() + 15
    while any(_alive(p) for p in pids["group"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [p for p in pids["group"] if _alive(p)] == []
    # the process that left the group tries to publish once its parent is gone (a Python
    # start and an import: slow on a loaded machine)
    deadline = time.monotonic() + 90
    while _alive(pids["escaped"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pids["escaped"]), "the escaped process never tried to publish"
    assert not (run_dir["out"] / "published").exists()
    # it tried at once, while the CLI may still be stopping the rest: refused all the same
    refused = run_dir["out"] / "refused"
    assert refused.exists(), f"it neither published nor was refused; the CLI said: {err[-2000:]}"
    assert "so this process was left behind" in refused.read_text(), refused.read_text()
    assert ArtifactRegistry(run_dir["env"]["NEMOTRON_ARTIFACTS_ROOT"]).list() == []


RAY_RECIPE = textwrap.dedent('''\
    # /// script
    # [tool.runspec]
    # name = "test/ray-orphans"
    #
    # [tool.runspec.run]
    # launch = "direct"
    # ///
    import os, sys, time
    os.environ["RAY_DISABLE_USAGE_STATS"] = "1"
    import ray
    ray.init(address="local", num_cpus=1, include_dashboard=False, _temp_dir=os.environ["RAY_TMP"])

    @ray.remote
    def work():
        time.sleep(120)

    task = work.remote()
    time.sleep(3)  # the task's worker is up
    open(os.environ["RAY_READY"], "w").write("ready")
    time.sleep(120)
''')


def _ray_processes(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
                env = (entry / "environ").read_bytes()
            except OSError:
                continue
            if (marker.encode() in cmd or marker.encode() in env) and _alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def test_sigkill_of_the_cli_stops_a_local_ray_instance(tmp_path):
    """Ray's gcs_server, raylet, agents and task workers, started by a local driver, go too."""
    pytest.importorskip("ray")
    script = tmp_path / "ray_orphans.py"
    script.write_text(RAY_RECIPE)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "default.yaml").write_text("x: 1\n")
    import tempfile

    ray_tmp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))  # Ray's socket paths must stay short
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), RAY_TMP=str(ray_tmp), RAY_READY=str(tmp_path / "ready"))
    proc = subprocess.Popen([str(NEMOTRON), "run", str(script)], env=env, cwd=tmp_path, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not (tmp_path / "ready").exists():
            assert proc.poll() is None
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert len(_ray_processes(str(ray_tmp))) >= 3  # gcs_server, raylet, the task's worker, ...
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 20
        while _ray_processes(str(ray_tmp)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _ray_processes(str(ray_tmp)) == []
    finally:
        for pid in _ray_processes(str(ray_tmp)):
            os.kill(pid, signal.SIGKILL)
        import shutil

        shutil.rmtree(ray_tmp, ignore_errors=True)
