"""SSH host keys (docs/execution.md, tunnels): a new host key is trusted on first use, a
changed one fails the probe with ssh's reason. Runs the real probe against the local
sshd, with `ssh` reading a known_hosts file of the test's own (never the user's)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from nemo_runspec.errors import ExecutionError
from nemo_runspec.execution.tunnels import probe_ssh

pytestmark = [pytest.mark.ssh]


@pytest.fixture
def known_hosts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An `ssh` first on PATH that uses ``tmp_path/known_hosts`` and nothing else."""
    real = shutil.which("ssh")
    assert real, "ssh is not installed"
    hosts = tmp_path / "known_hosts"
    wrapper = tmp_path / "bin" / "ssh"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {real} -o UserKnownHostsFile={hosts} '
                       f'-o GlobalKnownHostsFile=/dev/null "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    return hosts


def test_a_new_host_key_is_trusted_on_first_use(known_hosts: Path, ssh_target) -> None:
    assert not known_hosts.exists()
    probe_ssh(ssh_target.host, ssh_target.user, ssh_target.port, str(ssh_target.identity))
    found = subprocess.run(["ssh-keygen", "-F", f"[{ssh_target.host}]:{ssh_target.port}", "-f", str(known_hosts)],
                           capture_output=True, text=True)
    assert found.returncode == 0 and "ssh-ed25519" in found.stdout, found.stdout + found.stderr
    probe_ssh(ssh_target.host, ssh_target.user, ssh_target.port, str(ssh_target.identity))  # known now


def test_a_changed_host_key_fails(known_hosts: Path, ssh_target, tmp_path: Path) -> None:
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    known_hosts.write_text(f"[{ssh_target.host}]:{ssh_target.port} {other.with_suffix('.pub').read_text()}")
    with pytest.raises(ExecutionError) as info:
        probe_ssh(ssh_target.host, ssh_target.user, ssh_target.port, str(ssh_target.identity))
    msg = str(info.value)
    assert f"cannot connect to {ssh_target.user}@{ssh_target.host}:{ssh_target.port}" in msg
    assert "Host key verification failed" in msg
