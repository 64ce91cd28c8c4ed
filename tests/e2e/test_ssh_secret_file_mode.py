"""The secrets file placed over SSH (the local sshd at 127.0.0.1:2222, which writes to this
machine's disk) is 0600 from the moment it exists, not chmod-ed after its creation.

A watcher in its own process (inotify, no GIL shared with paramiko's threads) stats the
file at every event in its directory, its creation first. The control shows the watcher
sees a creation mode wider than 0600: a plain SFTP open, which the server creates with
its own umask (022 here) and which stays that way until a chmod request follows.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .helpers import profile, runspec, write_script

pytestmark = [pytest.mark.slurm, pytest.mark.ssh]

import nemo_run as run  # noqa: E402 - a required dependency: a broken install fails, never skips

from nemo_runspec.slurm import prepare_job  # noqa: E402
from nemo_runspec.slurm.remote import place_secrets, sftp_session  # noqa: E402

_WATCHER = textwrap.dedent(r"""
    import ctypes, os, stat, struct, sys
    libc = ctypes.CDLL(None, use_errno=True)
    IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE = 0x2, 0x4, 0x8, 0x80, 0x100
    names = {IN_MODIFY: "MODIFY", IN_ATTRIB: "ATTRIB", IN_CLOSE_WRITE: "CLOSE_WRITE",
             IN_MOVED_TO: "MOVED_TO", IN_CREATE: "CREATE"}
    directory, target = sys.argv[1], sys.argv[2]
    fd = libc.inotify_init1(0)
    mask = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE
    if fd < 0 or libc.inotify_add_watch(fd, directory.encode(), mask) < 0:
        sys.exit(f"inotify: errno {ctypes.get_errno()}")
    print("READY", flush=True)
    while True:
        buf = os.read(fd, 65536)
        at = 0
        while at < len(buf):
            _, ev, _, size = struct.unpack_from("iIII", buf, at)
            name = buf[at + 16:at + 16 + size].rstrip(b"\0").decode()
            at += 16 + size
            if name != target:
                continue
            try:
                mode = oct(stat.S_IMODE(os.stat(os.path.join(directory, name)).st_mode))
            except FileNotFoundError:
                mode = "gone"
            for bit, label in names.items():
                if ev & bit:
                    print(label, mode, flush=True)
""")


@pytest.fixture(autouse=True)
def _cluster(slurm_cluster, ssh_target):
    return ssh_target


def _job(tmp_path: Path, ssh_target, secrets: dict[str, str]):
    prof = profile(tunnel="ssh", host=ssh_target.host, port=ssh_target.port, user=ssh_target.user,
                   identity=str(ssh_target.identity), remote_job_dir=str(tmp_path / "remote"))
    job = prepare_job(env=prof, mode="run", runspec=runspec(name="e2e/ssh-secret-mode"),
                      packager=run.Packager(), script=str(write_script(tmp_path, "print(1)\n")),
                      base_dir=tmp_path / "local", secrets=secrets)
    os.makedirs(job.job_dir, mode=0o700)  # so the watcher can watch it before the upload
    return job


class _Watcher:
    def __init__(self, path: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _WATCHER, os.path.dirname(path),
                                      os.path.basename(path)], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "READY"
        self.events: list[tuple[str, str]] = []

    def until(self, label: str, timeout: float = 20) -> list[tuple[str, str]]:
        """Events up to and including the first ``label`` one."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            event, mode = line.split()
            self.events.append((event, mode))
            if event == label:
                return self.events
        pytest.fail(f"no {label} event within {timeout}s; saw {self.events}")

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


def test_secrets_file_over_ssh_is_0600_from_creation(tmp_path, ssh_target):
    value = "tok_mode_check_24680"
    job = _job(tmp_path, ssh_target, {"API_TOKEN": value})
    watcher = _Watcher(job.secret_path)
    try:
        place_secrets(job)
        events = watcher.until("CLOSE_WRITE")
    finally:
        watcher.stop()
    assert events[0] == ("CREATE", "0o600"), events
    assert {mode for _, mode in events} == {"0o600"}, events
    assert Path(job.secret_path).read_text() == f"API_TOKEN={value}\n"


def test_control_a_plain_sftp_open_is_seen_created_wider(tmp_path, ssh_target):
    """The watcher sees a file's creation mode: SFTP's open creates it with the server's
    umask (022 on this sshd), which is why the upload does not use it."""
    job = _job(tmp_path, ssh_target, {"API_TOKEN": "unused"})
    watcher = _Watcher(job.secret_path)
    try:
        with sftp_session(job) as sftp, sftp.open(job.secret_path, "w"):
            events = watcher.until("CREATE")
    finally:
        watcher.stop()
    assert events == [("CREATE", "0o644")]
