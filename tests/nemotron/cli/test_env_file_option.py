"""`--env-file PATH` (docs/cli.md, global options; docs/env-toml.md, discovery): a
directory means DIR/env.toml; the file must exist and be a regular file; an empty
file has no profiles; a device, pipe or socket is a one-line error saying what it is.
Run through the real console script, as a user would."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from tests.nemotron_cli import NEMOTRON


def nemotron(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(cwd / "home"), COLUMNS="200")
    return subprocess.run([str(NEMOTRON), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()  # project root: discovery stops here
    return tmp_path


def error_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [ln for ln in proc.stderr.splitlines() if ln.strip()]


def test_a_directory_means_its_env_toml(work: Path) -> None:
    (work / "cfg").mkdir()
    (work / "cfg" / "env.toml").write_text('[dev]\nexecutor = "local"\n')
    proc = nemotron(work, "--env-file", str(work / "cfg"), "env", "list")
    assert proc.returncode == 0, proc.stderr
    assert f"env file: {work / 'cfg' / 'env.toml'}" in proc.stdout and "dev" in proc.stdout


def test_a_directory_without_env_toml_is_a_one_line_error(work: Path) -> None:
    (work / "cfg").mkdir()
    proc = nemotron(work, "--env-file", str(work / "cfg"), "env", "list")
    assert proc.returncode == 2
    (line,) = error_lines(proc)
    assert line.startswith("error: ") and f"{work / 'cfg' / 'env.toml'}" in line and "does not exist" in line


def test_an_empty_file_has_no_profiles(work: Path) -> None:
    (work / "empty.toml").write_text("")
    proc = nemotron(work, "--env-file", str(work / "empty.toml"), "env", "list")
    assert proc.returncode == 0, proc.stderr
    assert "No profiles." in proc.stdout


def _fifo(work: Path) -> Path:
    path = work / "pipe"
    os.mkfifo(path)
    return path


def _socket(work: Path) -> Path:
    path = work / "sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()
    return path


@pytest.mark.parametrize(("make", "kind"), [
    (lambda work: Path("/dev/null"), "a character device"),
    (_fifo, "a named pipe"),  # opening a FIFO to read it would block forever
    (_socket, "a socket"),
])
@pytest.mark.parametrize("command", [["env", "list"], ["nano3", "pretrain", "-c", "tiny", "--batch", "dev",
                                                        "--dry-run"]])
def test_a_device_pipe_or_socket_is_a_one_line_error(work: Path, make, kind: str, command: list[str]) -> None:
    path = make(work)
    proc = nemotron(work, "--env-file", str(path), *command)
    assert proc.returncode == 2, proc.stderr
    (line,) = error_lines(proc)
    assert line.startswith(f"error: {path}: ") and f"is {kind}, not a regular file" in line


def test_help_with_a_pipe_says_so_and_returns(work: Path) -> None:
    proc = nemotron(work, "--env-file", str(_fifo(work)), "nano3", "pretrain", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "not a regular file" in proc.stdout
