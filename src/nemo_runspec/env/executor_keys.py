"""Which profile keys each executor reads, from what each backend declares (its class's
``profile``, :class:`nemo_runspec.env.keys.ProfileKeys`), read through the registry by name.

nemo-run has more executors than Slurm: ``docker``, ``skypilot``, ``dgxcloud`` and
``lepton`` profiles set keys of their own. A key that the profile's executor does not
read is an error at its line, not ignored: ``ipc_mode`` in a Slurm profile, or
``partition`` in a Docker one, would otherwise look like it did something. Keys every
executor reads (``env_vars``, ``container_image``, ``nodes``, packaging, ...) are declared
by none. A plug-in's own keys count for its profiles only; in another executor's profile
they are unknown keys.

Standard library and pydantic only (imported with :mod:`nemo_runspec.env.model`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import WrapValidator

from nemo_runspec.env.registry import BUILTIN, accept_plugin, builtin_names, declared

#: the built-in executor names (declared once: nemo_runspec.env.registry)
ExecutorName = Literal[builtin_names()]  # type: ignore[valid-type]
#: env.toml's ``executor``: a built-in name, or one an installed plug-in registers
ExecutorKey = Annotated[ExecutorName | None, WrapValidator(accept_plugin)]


@functools.cache
def key_readers(executor: str | None = None) -> dict[str, tuple[str, ...]]:
    """Profile key -> the executors that read it, for the keys not every executor reads: the
    built-ins' (in the registry's order), and ``executor``'s when it is a plug-in."""
    names = [*BUILTIN, *([executor] if executor is not None and executor not in BUILTIN else [])]
    readers: dict[str, list[str]] = {}
    for name in names:
        for key in declared(name).read():
            readers.setdefault(key, []).append(name)
    return {key: tuple(users) for key, users in readers.items()}


@functools.cache
def lenient(executor: str | None = None) -> frozenset[str]:
    """The executors whose profiles keep each other's keys quietly (``local`` and ``slurm``)."""
    names = [*BUILTIN, *([executor] if executor is not None and executor not in BUILTIN else [])]
    return frozenset(name for name in names if declared(name).lenient)


def unused_executor_keys(executor: str, values: Mapping[str, Any]) -> list[str]:
    """Keys set in ``values`` (``None`` is unset) that ``executor`` does not read, in the order of ``values``.

    For a lenient executor (``local``, ``slurm``) only the keys of the others count: a profile
    without ``executor`` runs here, and Slurm keys in it stay as quiet as they always were.
    """
    readers, quiet = key_readers(executor), lenient(executor)

    def counts(users: tuple[str, ...]) -> bool:
        return executor not in quiet or quiet.isdisjoint(users)

    return [k for k, v in values.items()
            if v is not None and k in readers and executor not in readers[k] and counts(readers[k])]


def ssh_job_dir_problem(host: str | None, user: str | None, identity: str | None) -> str:
    """Why a ``tunnel = "ssh"`` profile without ``remote_job_dir`` (the reference's SSH
    example) is refused, quoting the profile's SSH keys with the one to add. There is no
    default: this machine cannot see the cluster's filesystem to choose a directory
    there, and a wrong guess would surface only at submission (docs/env-toml.md)."""
    keys = {"tunnel": "ssh", "host": host, "user": user, "identity": identity,
            "remote_job_dir": f"/lustre/{user or 'you'}/nemotron-jobs"}
    return ('tunnel = "ssh" requires remote_job_dir, the job directory on the cluster\'s shared filesystem '
            "(there is no default: this machine cannot see that filesystem); the reference's SSH example "
            "needs this one more key: " + ", ".join(f'{k} = "{v}"' for k, v in keys.items() if v))


def executor_problem(executor: str, values: Mapping[str, Any]) -> str | None:
    """The first problem of a merged profile for its executor, as one message starting with the key:
    a key it does not read, a key it needs, mounts of the wrong shape, then its own rules."""
    readers = key_readers(executor)
    for key in unused_executor_keys(executor, values):
        return (f"{key} = {_shown(values[key])} is not used by executor = \"{executor}\" (read only by executor = "
                f"{' or '.join(repr(u) for u in readers[key])}; remove it or change executor)")
    own = declared(executor)
    for key, hint in own.required.items():
        if values.get(key) in (None, "", []):
            return f"executor = \"{executor}\" requires {key} ({hint})"
    if not own.mount_tables and any(not isinstance(m, str) for m in values.get("mounts") or []):
        takers = " or ".join(f'executor = "{n}"' for n in BUILTIN if declared(n).mount_tables)
        return f'mounts = [...] of executor = "{executor}" are "src:dst[:flags]" strings (tables are for {takers})'
    return own.problem(values) if own.problem is not None else None


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str | int | float):
        return repr(value)
    return "[...]" if isinstance(value, list | tuple) else "{...}"
