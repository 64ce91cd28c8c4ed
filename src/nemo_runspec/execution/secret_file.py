"""Deliver secret environment variables to a Slurm job without writing their values
into the sbatch script, the job's logs or ``env_vars``.

Mechanism: the values go into a mode-0600 file inside the job directory (written
locally with ``O_EXCL``; over SSH by a remote ``umask 077`` shell that creates it
with ``O_EXCL``, so it is 0600 from the moment it exists). The sbatch script only
contains :func:`source_snippet`, which turns shell tracing off (the nemo-run
template runs ``set -evx``), sources the file with ``set -a`` so every entry is
exported to the job's ``srun`` steps, turns tracing back on, and deletes the file
when the batch script exits (kept for a requeue).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nemo_runspec.errors import ExecutionError

SECRET_FILE_NAME = ".nemotron-secrets.env"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def render_secret_file(secrets: Mapping[str, Any]) -> str:
    """Shell text assigning every secret (``NAME=value`` lines, each value the shell word of
    :func:`nemo_runspec.dollar.shell_word`: the same ``$`` rule as plain env vars)."""
    from nemo_runspec.dollar import shell_word

    lines = []
    for name, value in secrets.items():
        if not _NAME.match(name):
            raise ExecutionError(f"invalid environment variable name {name!r} for a secret")
        lines.append(f"{name}={shell_word(str(value))}")
    return "\n".join(lines) + "\n"


def write_secret_file(path: str | os.PathLike[str], secrets: Mapping[str, Any]) -> Path:
    """Create ``path`` with mode 0600 (never readable by others, even briefly)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(render_secret_file(secrets))
    os.chmod(path, 0o600)  # in case umask tightened/loosened nothing odd
    return path


def upload_command(remote_path: str) -> str:
    """The remote shell command that creates ``remote_path`` 0600 and fills it from stdin.

    ``umask 077`` makes the shell's ``open(O_CREAT, 0666)`` create the file 0600 in the
    same system call (SFTP's open would create it with the server's default mode and
    chmod it only on the next request); ``set -C`` makes ``>`` use ``O_EXCL``, so a
    file someone else created at that path in the meantime is refused, never reused.
    """
    q = shlex.quote(remote_path)
    return f"umask 077 && rm -f -- {q} && set -C && cat > {q}"


def upload_secret_file(transport: Any, remote_path: str, secrets: Mapping[str, Any]) -> None:
    """Create the secrets file 0600 on an SSH host (a paramiko ``Transport``).

    The values travel on the command's stdin (never on its command line) to
    :func:`upload_command`; the file is never readable by others, even briefly.
    """
    data = render_secret_file(secrets).encode()  # a bad name fails before anything is created
    chan = transport.open_session()
    try:
        chan.exec_command(upload_command(remote_path))
        try:
            chan.sendall(data)
            chan.shutdown_write()
        except OSError:
            pass  # the command ended before reading its input: its status and message say why
        err = chan.makefile_stderr("rb").read().decode(errors="replace").strip()
        rc = chan.recv_exit_status()
    finally:
        chan.close()
    if rc != 0:
        raise ExecutionError(f"could not create the secrets file {remote_path} on the SSH host "
                             f"(exit {rc}): {err or 'no message'}")


def source_snippet(remote_path: str, *, shell_word: str | None = None) -> str:
    """Shell line for the sbatch setup: source the file with tracing off; delete it at exit.

    The file is removed when the batch script ends (``trap ... EXIT``), except
    when nemo-run's template is about to requeue a failed attempt
    (``TORCHX_MAX_RETRIES`` > ``SLURM_RESTART_COUNT``): the next attempt sources
    it again. A job Slurm requeues after a node failure is killed without running
    the trap, so its file survives too. The shell's ``-v``/``-x`` flags are
    restored afterwards (nemo-run's template traces; ours does not).
    ``shell_word`` is the path as a shell word when it must expand there (a sweep's
    per-point file, ``.../points/"$SLURM_ARRAY_TASK_ID"/...``); it is used as given.
    """
    q = shell_word or shlex.quote(remote_path)
    return (
        "{ _nemotron_flags=$-; set +vx; } 2>/dev/null; "
        f"if [ -f {q} ]; then set -a; . {q}; set +a; "
        f"else echo 'nemotron: secrets file {remote_path} is missing' >&2; fi; "
        f"NEMOTRON_SECRETS_FILE={q}; "
        "_nemotron_drop_secrets() { _rc=$?; "
        'if [ "$_rc" -eq 0 ] || [ "${TORCHX_MAX_RETRIES:-0}" -le "${SLURM_RESTART_COUNT:-0}" ]; '
        'then rm -f "$NEMOTRON_SECRETS_FILE"; fi; }; '
        "trap _nemotron_drop_secrets EXIT; "
        "case $_nemotron_flags in *v*) set -v;; esac; case $_nemotron_flags in *x*) set -x;; esac"
    )
