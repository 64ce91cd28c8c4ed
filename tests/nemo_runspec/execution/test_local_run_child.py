"""run_child: a local job and everything it started stop with it, Ctrl-C included."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from nemo_runspec.execution.local import run_child
from tests.nemotron_cli import NEMOTRON
from tests.processes import alive as _alive


def test_exit_code_and_leftover_background_processes_are_stopped(tmp_path):
    pidfile = tmp_path / "bg.pid"
    code = run_child(["bash", "-c", f"sleep 300 & echo $! > {pidfile}; exit 3"], cwd=tmp_path,
                     env=os.environ)
    assert code == 3
    bg = int(pidfile.read_text())
    deadline = time.time() + 10
    while _alive(bg) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(bg)


def test_ctrl_c_is_passed_on_and_the_job_may_clean_up(tmp_path):
    """The child sees SIGINT (KeyboardInterrupt), runs its cleanup, and the run returns 130."""
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(f"""
        import time
        from pathlib import Path
        Path({str(tmp_path / 'started')!r}).touch()
        try:
            time.sleep(60)
        except KeyboardInterrupt:
            Path({str(tmp_path / 'cleaned')!r}).touch()
            raise SystemExit(1)
    """))
    start = time.time()

    def fire():
        while not (tmp_path / "started").exists():
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=fire)
    thread.start()
    code = run_child([sys.executable, str(script)], cwd=tmp_path, env=os.environ, grace=10)
    thread.join()
    assert code == 130
    assert (tmp_path / "cleaned").exists()
    assert time.time() - start < 10


def test_a_job_that_ignores_ctrl_c_is_terminated_after_the_grace(tmp_path):
    script = tmp_path / "stubborn.py"
    script.write_text(textwrap.dedent(f"""
        import signal, time
        from pathlib import Path
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        Path({str(tmp_path / 'started')!r}).touch()
        time.sleep(60)
    """))

    def fire():
        while not (tmp_path / "started").exists():
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=fire)
    thread.start()
    start = time.time()
    code = run_child([sys.executable, str(script)], cwd=tmp_path, env=os.environ, grace=1)
    thread.join()
    assert code == 130
    assert time.time() - start < 15


def test_local_data_prep_interrupted_leaves_no_ray_process(tmp_path):
    """Ctrl-C at the terminal (SIGINT to the CLI's process group) during a local
    data prep: the command exits 130 and no process of its Ray instance survives."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    # the tiny input would run in process: force a local Ray instance, whose cleanup is the point
    env.update(NEMOTRON_HOME=str(tmp_path / "nhome"), TERM="dumb", NEMOTRON_DATA_PREP_IN_PROCESS_BYTES="0",
               NEMOTRON_DATA_PREP_RAY="1")
    nemotron = NEMOTRON
    proc = subprocess.Popen([str(nemotron), "nano3", "data", "prep", "pretrain", "-c", "tiny"],
                            env=env, cwd=tmp_path, start_new_session=True, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if "Started a local Ray instance" in line or "shards" in line:
            break
    os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 130, "".join(seen) + out
    # every process whose environment names this run's NEMOTRON_HOME is gone
    marker = f"NEMOTRON_HOME={tmp_path / 'nhome'}".encode()
    deadline = time.time() + 15
    left: list[int] = []
    while time.time() < deadline:
        left = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    if marker in (entry / "environ").read_bytes() and _alive(int(entry.name)):
                        left.append(int(entry.name))
                except OSError:
                    continue
        if not left:
            break
        time.sleep(0.5)
    assert left == [], [Path(f"/proc/{p}/cmdline").read_bytes()[:80] for p in left]


