"""The README's test command in a fresh `git clone` with nothing beside it (no ../shared, no
.venv): `scripts/test.sh --setup-only` (and CI's `.ci/run --setup-only`) gets through the whole
set-up (bootstrap, cluster, container stacks) without running the suite. A container stack
that cannot be set up is named, with the tests it leaves out and why, in the last line: the
exit status stays 0, except under CI=true.

`slurm-cluster.sh up` runs here as in every set-up: idempotent on the running cluster, but it
resumes a node that is down, hence cluster_alone. The clone's venv reaches the packages of the
venv running this test through a .pth file, so its bootstrap is real but installs only the
clone itself (about 40 s, instead of a quarter of an hour for torch and the rest).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slurm, pytest.mark.cluster_alone, pytest.mark.slow]

#: what a newcomer's shell does not have: this workplace's set-up and test-run variables
DROPPED = ("CI", "NEMOTRON_CONTAINERS", "NEMOTRON_CONTAINER_KIT", "NEMOTRON_ENROOT_SRC", "NEMOTRON_PYXIS_SRC",
           "NEMOTRON_CONTAINER_IMAGE", "NEMOTRON_DOCKER_IMAGE", "NEMOTRON_TEST_DOCKER_HOST",
           "NEMOTRON_TEST_PYXIS_UNAVAILABLE", "NEMOTRON_TEST_DOCKER_UNAVAILABLE", "DOCKER_HOST",
           "VIRTUAL_ENV", "PYTHONPATH")
SETUP_DONE = "scripts/test.sh: set-up done: cluster up; "


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git clone of this checkout alone in a new directory, its .venv seeing our packages."""
    if os.geteuid() != 0:
        pytest.skip("scripts/test.sh installs packages and starts daemons: it runs as root")
    base = tmp_path_factory.mktemp("fresh-machine")
    repo = base / "nemotron"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(repo)], check=True, timeout=300,
                   stdin=subprocess.DEVNULL)
    assert sorted(p.name for p in base.iterdir()) == ["nemotron"]  # nothing beside it: no shared/
    subprocess.run([sys.executable, "-m", "venv", str(repo / ".venv")], check=True, timeout=300)
    site = subprocess.run([str(repo / ".venv/bin/python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    ours = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    Path(site, "_nemotron_test_packages.pth").write_text("\n".join(ours) + "\n")
    return repo


def _setup(repo: Path, command: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in DROPPED}
    return subprocess.run(command, cwd=repo, env=base | env, capture_output=True, text=True, timeout=1500,
                          stdin=subprocess.DEVNULL)


def _last_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def test_ci_command_gets_through_the_set_up_of_a_clone(clone):
    proc = _setup(clone, ["bash", ".ci/run", "--setup-only"])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "unbound variable" not in out and "Traceback" not in out
    # the bootstrap installed the clone itself into the clone's own venv
    assert (clone / ".venv/.installed-test").is_file(), out
    where = subprocess.run([str(clone / ".venv/bin/python"), "-c", "import nemotron; print(nemotron.__file__)"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert where == str(clone / "src/nemotron/__init__.py")
    assert "[slurm-cluster] up: cluster 'nemotron' ready" in proc.stdout
    assert _last_line(proc) == SETUP_DONE + "pyxis/enroot: ready; Docker engine: ready", out
    assert "passed" not in out and "tests without the cluster" not in out  # the suite did not run


def test_a_docker_engine_without_its_image_is_named_in_the_last_line(clone, tmp_path):
    """A real failure: the Docker test image must be made from a Debian mirror nobody answers at."""
    proc = _setup(clone, ["bash", "scripts/test.sh", "--setup-only"],
                  NEMOTRON_DOCKER_IMAGE=str(tmp_path / "missing" / "image.sqsh"),
                  NEMOTRON_DEBIAN_MIRROR="http://127.0.0.1:9/debian", NEMOTRON_CONTAINER_WORK=str(tmp_path / "work"))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "unbound variable" not in out
    why = f"no test image: debootstrap failed (log: {tmp_path}/work/logs/debootstrap.log)"
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    assert lines[-2] == SETUP_DONE + f"pyxis/enroot: ready; Docker engine: {why}", out
    assert re.fullmatch(r"scripts/test\.sh: container tests NOT RUN: \d+ tests in "
                        r"tests/nemotron/cli/test_docker_executor\.py need a Docker engine: " + re.escape(why),
                        lines[-1]), out


def test_under_ci_a_missing_container_stack_fails_with_the_same_line(clone):
    proc = _setup(clone, ["bash", ".ci/run", "--setup-only"], NEMOTRON_CONTAINERS="off")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    last = _last_line(proc)
    assert last.startswith("scripts/test.sh: container tests NOT RUN: "), out
    pyxis, docker = last.removeprefix("scripts/test.sh: container tests NOT RUN: ").split("; ")
    assert pyxis.endswith(" need pyxis/enroot: not set up (NEMOTRON_CONTAINERS=off)")
    for test_file in ("tests/e2e/test_containers.py", "tests/e2e/test_squash.py", "tests/e2e/test_git_mounts.py"):
        assert test_file in pyxis
    assert re.fullmatch(r"\d+ tests in tests/nemotron/cli/test_docker_executor\.py need a Docker engine: "
                        r"not set up \(NEMOTRON_CONTAINERS=off\) \(CI=true: this fails the run\)", docker), last
