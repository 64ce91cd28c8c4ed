"""``${run.*}`` interpolation and remote paths (the reference's ``nemo_runspec.utils``, an alias of this module).

The reference resolves ``${run.*}`` references of a recipe config at submission
with :func:`resolve_run_interpolations` and rewrites local paths for the job's
container with :func:`rewrite_paths_for_remote`. The CLI here does neither
itself (the job's ``train.yaml`` keeps ``${run.*}`` and its ``run:`` section,
and the script resolves them; see docs/migrating-from-reference.md): these are
for code written against the reference that calls them. Nothing here imports
more than the standard library and omegaconf.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["JOB_DIR", "resolve_run_interpolations", "rewrite_paths_for_remote"]

#: where nemo-run's executors put the job dir in the job's container (the code is under ``code/``)
JOB_DIR = "/nemo_run"

_RUN_REF = re.compile(r"\$\{run\.([A-Za-z_][\w-]*(?:\.[\w-]+)*)\}")
_MISSING = object()


def _lookup(run_data: Any, path: str) -> Any:
    value = run_data
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list | tuple) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def resolve_run_interpolations(obj: Any, run_data: Mapping[str, Any]) -> Any:
    """``obj`` (dicts and lists walked, a copy) with every ``${run.KEY.SUB}`` replaced
    by ``run_data[KEY][SUB]``.

    A string that is exactly one reference becomes the value itself (an int stays an
    int, a mapping a mapping); inside a longer string the value is written as text
    (``None`` as empty). Other interpolations (``${art:data,path}``, ``${oc.env:X}``)
    and references ``run_data`` cannot answer are kept as written, so the config can
    still resolve them later. ``run_data`` may be a ``DictConfig`` (read unresolved).
    """
    if type(run_data).__name__ == "DictConfig":
        from omegaconf import OmegaConf

        run_data = OmegaConf.to_container(run_data, resolve=False)  # type: ignore[assignment]
    if isinstance(obj, Mapping):
        return {k: resolve_run_interpolations(v, run_data) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [resolve_run_interpolations(v, run_data) for v in obj]
    if not isinstance(obj, str) or "${run." not in obj:
        return obj
    whole = _RUN_REF.fullmatch(obj)
    if whole:
        value = _lookup(run_data, whole.group(1))
        return obj if value is _MISSING else value

    def text(match: re.Match[str]) -> str:
        value = _lookup(run_data, match.group(1))
        if value is _MISSING:
            return match.group(0)
        return "" if value is None else str(value)

    return _RUN_REF.sub(text, obj)


def rewrite_paths_for_remote(obj: Any, repo_root: str | Path) -> Any:
    """``obj`` with local paths rewritten to where the job sees them (a copy).

    - ``${oc.env:PWD}`` -> ``/nemo_run/code`` (the packaged code);
    - a value starting with ``${oc.env:NEMO_RUN_DIR}`` (with or without a default)
      -> ``/nemo_run`` followed by the rest;
    - an absolute path inside ``repo_root`` -> the same path under ``/nemo_run/code``.

    Everything else is returned unchanged. Our own jobs do not need it: the job
    dir is at ``/nemo_run`` in a container and ``train.yaml`` paths are
    relative to the code dir the job starts in.
    """
    root = str(repo_root).rstrip("/")
    if isinstance(obj, Mapping):
        return {k: rewrite_paths_for_remote(v, root) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [rewrite_paths_for_remote(v, root) for v in obj]
    if not isinstance(obj, str):
        return obj
    if "${oc.env:PWD}" in obj:
        return obj.replace("${oc.env:PWD}", f"{JOB_DIR}/code")
    run_dir = re.match(r"\$\{oc\.env:NEMO_RUN_DIR(?:,[^}]*)?\}", obj)
    if run_dir:
        return JOB_DIR + obj[run_dir.end():]
    if root and (obj == root or obj.startswith(root + "/")):
        return f"{JOB_DIR}/code/" + obj[len(root):].lstrip("/")
    return obj
