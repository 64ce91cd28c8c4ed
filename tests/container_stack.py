"""The container stacks some tests need, and what such a test does when one is missing.

- `pyxis`: pyxis + enroot on the local Slurm cluster with the squashfs test image
  (scripts/containers.sh, run by `scripts/slurm-cluster.sh up`); fixture `container_image`
  (tests/e2e/conftest.py).
- `docker`: a Docker engine with the test image (scripts/docker-engine.sh); fixture `docker_host`.

A test that takes one of these fixtures gets the stack's marker (:func:`mark_by_fixture`, from
the root conftest), so `-m "not pyxis"` leaves it out. scripts/test.sh sets both stacks up;
for one it could not, it puts the reason in NEMOTRON_TEST_PYXIS_UNAVAILABLE /
NEMOTRON_TEST_DOCKER_UNAVAILABLE, leaves the marked tests out and names them in its last line
(`python -m tests.container_stack PYTEST_ARGS...` lists them). Run any other way, such a
test skips with the reason, or fails under CI=true, where container tests must run.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import NoReturn

import pytest

REPO = Path(__file__).resolve().parents[1]
#: marker -> (the fixture that needs it, what the stack is called in messages)
STACKS = {"pyxis": ("container_image", "pyxis/enroot"), "docker": ("docker_host", "Docker engine")}
UNAVAILABLE_ENV = {"pyxis": "NEMOTRON_TEST_PYXIS_UNAVAILABLE", "docker": "NEMOTRON_TEST_DOCKER_UNAVAILABLE"}
PYXIS_DROPIN = Path("/etc/slurm/plugstack.conf.d/pyxis.conf")


def marker_descriptions() -> list[str]:
    """The `markers` ini lines for the stacks' markers."""
    return [f"{marker}: needs the {name} (fixture {fixture}); set up by scripts/test.sh"
            for marker, (fixture, name) in STACKS.items()]


def mark_by_fixture(items: list[pytest.Item]) -> None:
    """Give every test that takes a stack's fixture the stack's marker."""
    for item in items:
        for marker, (fixture, _) in STACKS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)


def unavailable(marker: str, reason: str) -> NoReturn:
    """Skip the test for a missing stack, or fail it under CI=true."""
    message = f"{STACKS[marker][1]} not available: {reason}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message} (under CI=true the container tests must run)", pytrace=False)
    pytest.skip(message)


def pyxis_image(slurm_state: Path) -> str:
    """The test image pyxis runs, as the last `slurm-cluster.sh up` recorded it."""
    told = os.environ.get(UNAVAILABLE_ENV["pyxis"])
    if told:
        unavailable("pyxis", told)
    record = slurm_state / "container-image"
    image = record.read_text().strip() if record.is_file() else ""
    if image and Path(image).is_file() and PYXIS_DROPIN.is_file():
        return image
    status = subprocess.run(["bash", str(REPO / "scripts" / "containers.sh"), "status"], capture_output=True,
                            text=True, timeout=60, stdin=subprocess.DEVNULL)
    why = status.stdout.strip() or status.stderr.strip()
    unavailable("pyxis", f"{why}; no usable image recorded in {record} (run scripts/slurm-cluster.sh up)")


def docker_host() -> str:
    """The DOCKER_HOST of the engine scripts/docker-engine.sh started."""
    told = os.environ.get(UNAVAILABLE_ENV["docker"])
    if told:
        unavailable("docker", told)
    host = os.environ.get("NEMOTRON_TEST_DOCKER_HOST")
    if host:
        return host
    unavailable("docker", "NEMOTRON_TEST_DOCKER_HOST is not set (scripts/docker-engine.sh up starts the "
                          "engine and prints its DOCKER_HOST; scripts/test.sh sets both)")


class _ListMarked:
    """pytest plugin: counts the collected tests of each stack, by file."""

    def __init__(self) -> None:
        self.found: dict[str, Counter[str]] = {marker: Counter() for marker in STACKS}

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            for marker, files in self.found.items():
                if item.get_closest_marker(marker):
                    files[item.nodeid.split("::")[0]] += 1


def list_marked(pytest_args: list[str]) -> dict[str, str]:
    """marker -> "N tests in FILE, FILE" for the tests PYTEST_ARGS select that need the stack."""
    plugin = _ListMarked()
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *pytest_args], plugins=[plugin])
    return {marker: f"{sum(files.values())} tests in {', '.join(sorted(files))}"
            for marker, files in plugin.found.items() if files}


if __name__ == "__main__":
    for marker, tests in list_marked(sys.argv[1:] or ["tests"]).items():
        print(f"{marker}\t{tests}")
