"""Where the job runs, reached from here: run commands, read logs, place files.

A local tunnel means this machine (subprocesses, plain files); an SSH tunnel
means the login node over nemo-run's ``SSHTunnel`` (Fabric), with files
uploaded over SFTP. The secrets file is created 0600 before any byte of it is
written, locally and remotely.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nemo_runspec.errors import ExecutionError
from nemo_runspec.slurm.prepared import PreparedJob

if TYPE_CHECKING:
    from nemo_run.core.tunnel.client import Tunnel


class Remote:
    """Run commands / read files where the job runs (locally or over the tunnel)."""

    def __init__(self, job: PreparedJob) -> None:
        self.values, self.base_dir = job.values, job.base_dir
        self.local = job.tunnel_kind == "local"
        self._tunnel: Tunnel | None = None

    @classmethod
    def for_profile(cls, values: Mapping[str, Any]) -> Remote:
        """Where a profile submits, without a prepared job (``nemotron kit squash``)."""
        from nemo_runspec.execution.tunnels import default_base_dir

        remote = cls.__new__(cls)
        remote.values, remote.base_dir = dict(values), default_base_dir(values)
        remote.local = (values.get("tunnel") or "local") == "local"
        remote._tunnel = None
        return remote

    @property
    def tunnel(self) -> Tunnel:
        """The job's nemo-run tunnel (built on first use)."""
        if self._tunnel is None:
            from nemo_runspec.execution.tunnels import build_tunnel

            self._tunnel = build_tunnel(self.values, base_dir=self.base_dir)
        return self._tunnel

    def run(self, cmd: str) -> tuple[int, str, str]:
        """``(exit code, stdout, stderr)`` of the shell command ``cmd`` (here: a child that
        an interrupt stops and that cannot outlive this process, :mod:`~nemo_runspec.slurm.client`)."""
        if self.local:
            from nemo_runspec.slurm.client import run_here

            return run_here(cmd)
        from nemo_runspec.execution.tunnels import run_via

        return run_via(self.tunnel, cmd)

    def read_from(self, path: str, offset: int) -> bytes:
        """The bytes of ``path`` from ``offset`` on (empty when it does not exist yet)."""
        if self.local:
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    return f.read()
            except FileNotFoundError:
                return b""
        rc, out, _ = self.run(f"tail -c +{offset + 1} {shlex.quote(path)} 2>/dev/null")
        return out.encode() if rc == 0 else b""


@contextlib.contextmanager
def ssh_session(job: PreparedJob, *, mkdir_mode: str | None = None) -> Iterator[Any]:
    """A fabric ``Connection`` on the job's ssh tunnel, with the job dir created first.

    A separate connection: the executor's tunnel is deep-copied by nemo-run later.
    """
    from nemo_runspec.execution.tunnels import build_tunnel

    ssh = build_tunnel(job.values, base_dir=job.base_dir)
    try:
        ssh.connect()
        mode = f"-m {mkdir_mode} " if mkdir_mode else ""
        ssh.session.run(f"mkdir -p {mode}{shlex.quote(job.job_dir)}", hide=True)
        yield ssh.session
    finally:
        ssh.cleanup()


@contextlib.contextmanager
def sftp_session(job: PreparedJob, *, mkdir_mode: str | None = None) -> Iterator[Any]:
    """An SFTP session on the job's ssh tunnel, with the job dir created first."""
    with ssh_session(job, mkdir_mode=mkdir_mode) as session:
        sftp = session.sftp()
        try:
            yield sftp
        finally:
            sftp.close()


def place_secrets(job: PreparedJob) -> None:
    """Write the job's 0600 secrets file where the job will source it."""
    from nemo_runspec.execution.secret_file import upload_secret_file, write_secret_file

    if not job.secrets:
        return
    if job.tunnel_kind == "local":
        for path in job.secret_paths():
            write_secret_file(path, job.secrets)
        return
    with ssh_session(job, mkdir_mode="700") as session:
        for path in job.secret_paths():
            upload_secret_file(session.client.get_transport(), path, job.secrets)


def place_files(job: PreparedJob) -> None:
    """Write ``job.files`` into the job dir (locally, or over SFTP for ssh tunnels)."""
    if not job.files:
        return
    if job.tunnel_kind == "local":
        from nemo_runspec.config.jobdir import atomic_write_text

        os.makedirs(job.job_dir, exist_ok=True)
        for name, text in job.files.items():
            target = Path(job.job_dir) / name
            target.parent.mkdir(parents=True, exist_ok=True)  # a sweep's points/<i>/
            atomic_write_text(target, text, fsync=job.durable_files)
        return
    subdirs = sorted({os.path.dirname(n) for n in job.files if os.path.dirname(n)})
    if subdirs:
        make_remote_dir(job, *(os.path.join(job.job_dir, d) for d in subdirs))
    with sftp_session(job) as sftp:
        for name, text in job.files.items():
            with sftp.open(os.path.join(job.job_dir, name), "w") as f:
                f.write(text.encode())


def remove_secrets(job: PreparedJob) -> None:
    """Delete the secrets file (a job that never started never sourced it)."""
    if not job.secrets:
        return
    if job.tunnel_kind == "local":
        for path in job.secret_paths():
            with contextlib.suppress(OSError):
                os.unlink(path)
    else:
        with contextlib.suppress(Exception):
            Remote(job).run("rm -f " + " ".join(shlex.quote(p) for p in job.secret_paths()))


def make_remote_dir(job: PreparedJob, *paths: str) -> None:
    """``mkdir -p paths`` where the job runs (one command over SSH)."""
    if job.tunnel_kind == "local":
        for path in paths:
            os.makedirs(path, exist_ok=True)
        return
    rc, _, err = Remote(job).run("mkdir -p " + " ".join(shlex.quote(p) for p in paths))
    if rc != 0:
        raise ExecutionError(f"could not create {', '.join(paths)} on {job.values.get('host')}: {err.strip()}")
