"""Slurm's client commands (``sbatch``, ``squeue``, ``sacct``, ``scancel``, ``sinfo``) run here.

Each runs as a child tied to this process's life (:mod:`nemo_runspec.runtime.lifeline`):
it cannot outlive the CLI, and an interrupt (Ctrl-C, SIGTERM, SIGHUP) stops it
at once instead of waiting for it. Its stderr is read as it comes: a client that
announces it will retry something that cannot heal while it waits (Slurm's
configuration file cannot be read: the client retries for 60 s) is stopped at
the first such line, with one error saying what is wrong.
"""

from __future__ import annotations

import os
import re
import selectors
import subprocess
from collections.abc import Mapping

from nemo_runspec.errors import ExecutionError

#: ``s_p_parse_file: cannot stat file /x/slurm.conf: No such file or directory, retrying in 1sec up to 60sec``
_CONF_RETRY = re.compile(r"s_p_parse_file: cannot (?:stat|open|read) file (?P<path>\S+?):?\s+(?P<why>[^,]*),"
                         r"\s*retrying")


class SlurmConfigUnreadable(ExecutionError):
    """A Slurm client cannot read Slurm's configuration (it would retry for a minute)."""


def hopeless(line: str) -> ExecutionError | None:
    """The error to stop with when a client's stderr ``line`` announces a retry that cannot
    succeed (the configuration file is missing or unreadable); None otherwise."""
    m = _CONF_RETRY.search(line)
    if m is None:
        return None
    conf = os.environ.get("SLURM_CONF")
    where = f"SLURM_CONF={conf}" if conf else "Slurm's default location"
    return SlurmConfigUnreadable(
        f"Slurm's configuration {m.group('path')} cannot be read ({m.group('why').strip()}; {where}): "
        "no Slurm command can reach the cluster",
        hint="point SLURM_CONF at the cluster's slurm.conf (or unset it), then run again")


def run_here(cmd: str, *, env: Mapping[str, str] | None = None, timeout: float | None = None) -> tuple[int, str, str]:
    """``(exit code, stdout, stderr)`` of the shell command ``cmd`` run on this machine.

    Raises the error of :func:`hopeless` as soon as the command's stderr says it
    would retry in vain, and re-raises an interrupt after stopping the command
    (and anything it started). ``timeout`` (seconds) stops it too: exit code 124.
    """
    import time

    from nemo_runspec.runtime import lifeline

    child = lifeline.spawn(["/bin/sh", "-c", cmd], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=dict(env) if env is not None else None)
    out: list[bytes] = []
    err: list[bytes] = []
    pending = b""
    sel = selectors.DefaultSelector()
    assert child.stdout is not None and child.stderr is not None
    sel.register(child.stdout, selectors.EVENT_READ, out)
    sel.register(child.stderr, selectors.EVENT_READ, err)
    deadline = None if timeout is None else time.monotonic() + timeout
    code: int | None = None
    try:
        while sel.get_map():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                code = 124
                break
            for key, _ in sel.select(left):
                data = os.read(key.fd, 65536)
                if not data:
                    sel.unregister(key.fileobj)
                    continue
                key.data.append(data)
                if key.data is err:
                    pending += data
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        problem = hopeless(line.decode(errors="replace"))
                        if problem is not None:
                            raise problem
        if code is None:
            code = child.wait()
    except BaseException:
        lifeline.stop_group(child.pid, grace=1.0)
        child.wait()
        raise
    finally:
        sel.close()
        child.stdout.close()
        child.stderr.close()
    if code == 124:
        lifeline.stop_group(child.pid, grace=1.0)
        child.wait()
    else:
        lifeline.release(child.pid)
    return code, b"".join(out).decode(errors="replace"), b"".join(err).decode(errors="replace")
