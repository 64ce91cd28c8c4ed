"""Profile values that Slurm shows to every user, where no credential may stand.

Every profile key except the environment (``env_vars``, which is split by the
secret rule and whose secrets reach the job through its 0600 file) and the keys
that hold secrets by design for other executors lands somewhere another user
can read: ``#SBATCH`` lines (a job ``comment``, the job name) that ``scontrol
show job`` prints, the batch script Slurm keeps (``startup_commands``, mounts,
``srun`` arguments) and the job's saved files. A credential-shaped value there
(:func:`nemo_runspec.secrets.looks_like_credential`: ``hf_...``, ``ghp_...``,
``AKIA...``, a URL with a password) is refused when the profile is read, with
one line that names the key and never the value.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from nemo_runspec.secrets import looks_like_credential

#: Keys whose values may be secrets (delivered or redacted as such), not shown by Slurm.
MAY_HOLD_SECRETS = frozenset({
    "env_vars", "secret_env_vars", "public_env_vars",  # split by the secret rule
    "client_id", "client_secret", "app_id", "app_secret",  # DGX Cloud credentials (redacted everywhere)
    "secret_vars",  # Lepton: names of its own secrets
})


def _strings(value: object, keypath: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str]]:
    if isinstance(value, str):
        yield keypath, value
    elif isinstance(value, Mapping):
        for key, sub in value.items():
            yield from _strings(sub, (*keypath, str(key)))
    elif isinstance(value, list | tuple):
        for sub in value:
            yield from _strings(sub, keypath)


def credential_key(values: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The key path of the first credential-shaped value outside :data:`MAY_HOLD_SECRETS`."""
    for key, value in values.items():
        if key in MAY_HOLD_SECRETS:
            continue
        for keypath, text in _strings(value, (str(key),)):
            if looks_like_credential(text):
                return keypath
    return None


#: What to do instead, for the error line.
HINT = ("give a secret to the job in env_vars, which reach it through its 0600 secrets file; never in a job "
        "comment, name, command or other setting")


def problem(keypath: tuple[str, ...], section: str) -> str:
    """The one-line problem for a credential at ``keypath`` (the value is not shown)."""
    return (f"key '{'.'.join(keypath)}' in {section} holds what looks like a credential (value not shown), and "
            "Slurm shows it to every user (scontrol show job, the batch script it keeps)")
