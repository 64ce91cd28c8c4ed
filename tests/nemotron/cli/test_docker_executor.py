"""executor = "docker" for real: `nemotron run SCRIPT --run/--batch` in a container of a local
image on the engine scripts/docker-engine.sh starts (the `docker_host` fixture; scripts/test.sh
exports NEMOTRON_TEST_DOCKER_HOST). Not marked allowed_skip: under CI=true a missing engine
fails. The dry run and the no-engine error need no engine and always run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
import time

import pytest

from tests.nemotron_cli import NEMOTRON

IMAGE = "nemotron-test/python3:bookworm"
SCRIPT = '''\
# /// script
# [tool.runspec]
# schema = "1"
# name = "demo/hello"
# [tool.runspec.run]
# launch = "direct"
# [tool.runspec.config]
# dir = "./config"
# default = "default"
# ///
import os, sys
print("in container:", os.path.exists("/.dockerenv"), "args:", sys.argv[3:])
print("token:", os.environ.get("MY_TOKEN", "")[::-1] == "6f5e4d3c2b1a-kot", "secrets file left:",
      os.path.exists("/nemo_run/.nemotron-secrets.env"))
print("config:", open(sys.argv[2]).read().strip())
sys.exit(int(os.environ.get("EXIT_WITH", "0")))
'''


@pytest.fixture
def project(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "default.yaml").write_text("greeting: hi\n")
    (tmp_path / "hello.py").write_text(SCRIPT)
    (tmp_path / "env.toml").write_text(textwrap.dedent(f'''
        [dk]
        executor = "docker"
        container_image = "{IMAGE}"
        ipc_mode = "host"
        shm_size = "256m"
        env_vars = {{ MY_TOKEN = "${{oc.env:MY_TOKEN}}", EXIT_WITH = "${{oc.env:EXIT_WITH,0}}" }}
        '''))
    env = {**os.environ, "NEMOTRON_HOME": str(tmp_path / "home"),
           "MY_TOKEN": "tok-a1b2c3d4e5f6", "NEMORUN_HOME": str(tmp_path / "nemorun")}
    return tmp_path, env


@pytest.fixture
def engine_project(project, docker_host):
    """The project, with the test engine as DOCKER_HOST."""
    cwd, env = project
    return cwd, {**env, "DOCKER_HOST": docker_host}


def _nemotron(project, *args, **env):
    cwd, base = project
    return subprocess.run([str(NEMOTRON), "run", "hello.py", *args], cwd=cwd, env={**base, **env},
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


def test_run_in_a_container_exits_with_the_scripts_code(engine_project):
    project = engine_project
    proc = _nemotron(project, "--run", "dk", "--", "x", "two words", EXIT_WITH="3")
    assert proc.returncode == 3, proc.stderr
    assert "in container: True args: ['x', 'two words']" in proc.stdout
    assert "token: True secrets file left: False" in proc.stdout
    assert "config: greeting: hi" in proc.stdout
    home = project[0] / "home"
    assert not list(home.rglob(".nemotron-secrets.env"))
    for path in home.rglob("*"):
        if path.is_file():
            assert "tok-a1b2c3d4e5f6" not in path.read_text(errors="replace"), path


def test_batch_returns_and_the_container_finishes(engine_project):
    project = engine_project
    started = time.monotonic()
    proc = _nemotron(project, "--batch", "dk")
    assert proc.returncode == 0, proc.stderr
    assert "follow: docker logs -f" in proc.stderr
    status = None
    while time.monotonic() - started < 120 and not status:
        status = list((project[0] / "home").rglob("status_*.out"))
        time.sleep(0.5)
    assert status, "the --batch container never finished (removed when the CLI exited?)"
    assert json.loads(status[0].read_text())["exit_code"] == "0"


def test_dry_run_is_offline_and_hides_secrets(project):
    proc = _nemotron(project, "--run", "dk", "--dry-run", DOCKER_HOST="unix:///nonexistent.sock")
    assert proc.returncode == 0, proc.stderr
    assert "nemo-run DockerExecutor" in proc.stdout and "ipc_mode: host" in proc.stdout
    assert "a1b2c3d4e5f6" not in proc.stdout + proc.stderr
    assert "MY_TOKEN=***REDACTED***" in proc.stdout
    assert not (project[0] / "home" / "jobs").exists()


def test_no_engine_is_one_line(project):
    proc = _nemotron(project, "--run", "dk", DOCKER_HOST="unix:///nonexistent.sock")
    assert proc.returncode == 1
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "docker" in lines[0] and "Traceback" not in proc.stderr
    assert not list((project[0] / "home").rglob(".nemotron-secrets.env"))


def _container_and_log(stderr: str) -> tuple[str, str]:
    return (re.search(r"^container: (\S+)$", stderr, re.M).group(1), re.search(r"^log: (\S+)$", stderr, re.M).group(1))


def test_run_in_a_container_ends_with_how_it_ended(engine_project):
    """As a Slurm job's (docs/execution.md, "How a job ends"): the job's last line (it wrote
    no outcome line), then the container's state and exit code, then its log."""
    ok = _nemotron(engine_project, "--run", "dk")
    assert ok.returncode == 0, ok.stderr
    container, log = _container_and_log(ok.stderr)
    assert "config: greeting: hi" in ok.stdout
    assert ok.stderr.rstrip("\n").splitlines()[-3:] == [
        ok.stdout.rstrip("\n").splitlines()[-1].strip(),  # what the job printed last (the summary strips it)
        f"job {container}: COMPLETED (exit code 0); the job wrote no outcome line: the line above is the last "
        "line in its log",
        f"  log:       {log}"]
    failed = _nemotron(engine_project, "--run", "dk", EXIT_WITH="3")
    assert failed.returncode == 3, failed.stderr
    container, log = _container_and_log(failed.stderr)
    assert failed.stderr.rstrip("\n").splitlines()[-3:] == [
        "exit code 3", f"job {container}: FAILED (exit code 3)", f"  log:       {log}"]
