"""Commands and files where a job runs (slurm/remote.py), for a profile on this machine's Slurm
(the local tunnel): real shell commands and real files. The SSH side is exercised against the
local sshd in tests/e2e/test_report_ssh.py and tests/e2e/test_ssh_secret_file_mode.py."""

from __future__ import annotations

from nemo_runspec.slurm.remote import Remote


def test_a_local_profile_runs_commands_here():
    remote = Remote.for_profile({"executor": "slurm", "account": "a"})
    assert remote.local
    assert remote.run("echo hi; echo err >&2; exit 3") == (3, "hi\n", "err\n")


def test_read_from_returns_the_bytes_after_the_offset(tmp_path):
    remote = Remote.for_profile({"tunnel": "local"})
    log = tmp_path / "log.out"
    log.write_bytes(b"first\nsecond\n")
    assert remote.read_from(str(log), 0) == b"first\nsecond\n"
    assert remote.read_from(str(log), 6) == b"second\n"
    assert remote.read_from(str(log), 100) == b""
    assert remote.read_from(str(tmp_path / "not yet"), 0) == b""


def test_an_ssh_profile_is_not_local():
    remote = Remote.for_profile({"tunnel": "ssh", "host": "login1", "user": "u", "remote_job_dir": "/r"})
    assert not remote.local and remote._tunnel is None  # nothing is connected before the first use
