"""Tunnels: how the submitting machine reaches the Slurm controller.

- ``tunnel = "local"``: we are on a login node; ``sbatch`` runs locally
  (nemo-run's ``LocalTunnel``). nemo-run only copies files correctly when the
  tunnel's ``job_dir`` equals ``<Experiment base_dir>/experiments``, so
  :func:`build_tunnel` always derives it that way.
- ``tunnel = "ssh"``: nemo-run's ``SSHTunnel`` to ``user@host:port`` with key
  ``identity``; jobs live under ``remote_job_dir`` on the cluster. Before anything
  else, :func:`probe_ssh` runs ``ssh -o BatchMode=yes`` so a wrong key, port or
  host fails in seconds with one clear :class:`ExecutionError` instead of hanging
  on a password prompt. The probe uses ``StrictHostKeyChecking=accept-new``
  (trust on first use; a *changed* host key still fails).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nemo_runspec.errors import ExecutionError
from nemo_runspec.script_values import check_cluster_dir

if TYPE_CHECKING:
    from nemo_run.core.tunnel.client import Tunnel

SSH_TIMEOUT = 10


def ssh_options(port: int | None, identity: str | None, timeout: int = SSH_TIMEOUT) -> list[str]:
    """Non-interactive ``ssh`` options shared by the probe and rsync."""
    opts = [
        "-o", "BatchMode=yes",
        "-o", f"ConnectTimeout={timeout}",
        "-o", "StrictHostKeyChecking=accept-new",
        "-o", "PasswordAuthentication=no",
        "-o", "KbdInteractiveAuthentication=no",
    ]
    if port:
        opts += ["-p", str(port)]
    if identity:
        opts += ["-i", os.path.expanduser(identity), "-o", "IdentitiesOnly=yes"]
    return opts


def describe_target(host: str, user: str | None, port: int | None, identity: str | None) -> str:
    """``user@host:port (identity …)`` for error messages."""
    target = f"{user}@{host}" if user else host
    target += f":{port or 22}"
    return f"{target} (identity {identity})" if identity else f"{target} (no identity set)"


def probe_ssh(
    host: str,
    user: str | None = None,
    port: int | None = None,
    identity: str | None = None,
    *,
    timeout: int = SSH_TIMEOUT,
) -> None:
    """Check that key-based SSH works, never prompting. Raise ExecutionError if not."""
    target = describe_target(host, user, port, identity)
    if identity and not Path(os.path.expanduser(identity)).is_file():
        raise ExecutionError(
            f"cannot connect to {target}: identity file not found",
            key="identity",
            hint="set `identity` in the env.toml profile to an existing private key",
        )
    ssh = shutil.which("ssh")
    if ssh is None:
        raise ExecutionError("`ssh` is not installed on this machine", hint="install openssh-client")
    dest = f"{user}@{host}" if user else host
    cmd = [ssh, *ssh_options(port, identity, timeout), dest, "true"]
    try:
        proc = subprocess.run(
            cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout + 5
        )
    except subprocess.TimeoutExpired:
        raise ExecutionError(
            f"cannot connect to {target}: timed out after {timeout + 5}s",
            hint="check host and port",
        ) from None
    if proc.returncode != 0:
        reason = " ".join(
            line.strip()
            for line in proc.stderr.splitlines()
            if line.strip() and not line.startswith("Warning: Permanently added")
        ) or f"ssh exited with {proc.returncode}"
        raise ExecutionError(
            f"cannot connect to {target}: {reason}",
            hint="check host, user, port and identity in the env.toml profile; "
            "only key authentication is used (no password prompts)",
        )


def _no_prompt(*_args: Any, **_kwargs: Any) -> Any:
    raise ExecutionError("SSH key authentication failed and password prompts are disabled")


def default_base_dir(values: Mapping[str, Any] | None = None) -> Path:
    """Local Experiment base dir: profile ``job_dir`` (local tunnel) else
    ``$NEMOTRON_HOME/jobs`` (default ``~/.nemotron/jobs``)."""
    values = values or {}
    if (values.get("tunnel") or "local") == "local" and values.get("job_dir"):
        return Path(os.path.expanduser(str(values["job_dir"]))).absolute()
    from nemo_runspec.paths import jobs_dir

    return jobs_dir().absolute()


def build_tunnel(values: Mapping[str, Any], *, base_dir: str | os.PathLike[str]) -> Tunnel:
    """Build the nemo-run tunnel for a profile (``values`` = validated profile keys).

    ``base_dir`` is the local Experiment base dir; for a local tunnel the job dir
    is ``<base_dir>/experiments`` (nemo-run's rule). For ssh the remote job dir is
    ``remote_job_dir`` (falling back to ``job_dir``).
    """
    from nemo_runspec._nemo_run import lean

    lean()
    kind = values.get("tunnel") or "local"
    if kind == "local":
        from nemo_run.core.tunnel.client import LocalTunnel

        check_cluster_dir(base_dir, from_profile=bool(values.get("job_dir")))
        return LocalTunnel(job_dir=os.path.join(os.fspath(base_dir), "experiments"))
    if kind == "ssh":
        from nemo_run.core.tunnel.client import SSHTunnel

        host = values.get("host")
        if not host:
            raise ExecutionError("tunnel = \"ssh\" needs `host`", key="host",
                                 hint="add host = \"login.cluster\" to the profile")
        remote = values.get("remote_job_dir") or values.get("job_dir")
        if remote and not values.get("remote_job_dir"):
            check_cluster_dir(str(remote), from_profile=True)  # job_dir as the cluster's job dir
        if not remote:
            raise ExecutionError("tunnel = \"ssh\" needs `remote_job_dir`", key="remote_job_dir",
                                 hint="a directory on the cluster's shared filesystem")
        identity = values.get("identity")
        tunnel = SSHTunnel(
            host=host,
            user=values.get("user") or os.environ.get("USER", "root"),
            port=values.get("port"),
            identity=os.path.expanduser(identity) if identity else None,
            job_dir=str(remote),
        )
        tunnel.auth_handler = _no_prompt
        tunnel.fallback_auth_handler = _no_prompt
        return tunnel
    raise ExecutionError(f"unknown tunnel {kind!r}", key="tunnel", hint="use \"local\" or \"ssh\"")


def run_via(tunnel: Tunnel, cmd: str) -> tuple[int, str, str]:
    """``(exit code, stdout, stderr)`` of the shell command ``cmd`` run through a nemo-run
    tunnel (local or SSH); a non-zero exit is returned, not raised."""
    r = tunnel.run(cmd, hide=True, warn=True)
    return r.return_code, r.stdout, r.stderr


def probe_tunnel(values: Mapping[str, Any]) -> None:
    """Probe an ssh tunnel profile (no-op for local tunnels)."""
    if (values.get("tunnel") or "local") == "ssh":
        probe_ssh(
            values.get("host") or "",
            values.get("user") or os.environ.get("USER", "root"),
            values.get("port"),
            values.get("identity"),
        )
