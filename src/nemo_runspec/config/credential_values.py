"""Values of a job config that look like credentials, and those declared not to be.

``run.not_secret`` lists dotted keys whose values are kept verbatim even when
they look like credentials (:func:`not_secret_values`); every other
credential-shaped value under an ordinary key is written as ``***REDACTED***``
in the job's files, and :func:`warn_credential_shaped` says so once, naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nemo_runspec.errors import ConfigError


def not_secret_values(data: Mapping[str, Any]) -> list[str]:
    """The string values at the dotted paths listed in ``run.not_secret``: kept
    verbatim in train.yaml and job.yaml even when they look like credentials.

    >>> not_secret_values({"model": {"id": "sk-a"}, "run": {"not_secret": ["model.id"]}})
    ['sk-a']
    """
    run = data.get("run") if isinstance(data, Mapping) else None
    paths = run.get("not_secret") if isinstance(run, Mapping) else None
    if paths is None:
        return []
    if isinstance(paths, str) or not all(isinstance(p, str) for p in paths):
        raise ConfigError("run.not_secret must be a list of dotted keys", key="run.not_secret",
                          hint="e.g. +run.not_secret=[model.name,data.url]")
    values = []
    for path in paths:
        node: object = data
        for part in path.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if isinstance(node, str):
            values.append(node)
    return values


def warn_credential_shaped(data: object, allowed: set[str] | None = None, path: str = "") -> None:
    """Say so (stderr) when a value under an ordinary key looks like a credential:
    the files written for the job replace it with ***REDACTED***. Values
    listed in ``run.not_secret`` are not reported."""
    if allowed is None:
        allowed = set(not_secret_values(data)) if isinstance(data, Mapping) else set()
    import sys

    from nemo_runspec.secrets import is_secret_name, looks_like_credential

    if isinstance(data, Mapping):
        for key, value in data.items():
            where = f"{path}.{key}" if path else str(key)
            if key == "env_sources" or (isinstance(key, str) and is_secret_name(key)) or where == "run.env.env_vars":
                continue
            warn_credential_shaped(value, allowed, where)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            warn_credential_shaped(value, allowed, f"{path}[{i}]")
    elif isinstance(data, str) and data not in allowed and looks_like_credential(data):
        print(f"warning: the value of {path} looks like a credential, so the job's train.yaml "
              f"holds ***REDACTED*** there; if it is not a secret, list it in run.not_secret "
              f"(+run.not_secret=[{path}]), if it is, pass it as an environment variable",
              file=sys.stderr)
