"""GPUs and processes per node: the one home of the ``nproc_per_node`` rule.

- ``gpus_per_node`` is what Slurm allocates on each node.
- In an env.toml profile ``nproc_per_node`` is an alias of ``gpus_per_node``:
  both set in one profile must agree (except ``gpus_per_node = 0``, a CPU
  cluster, where ``nproc_per_node`` is the process count), and the alias is folded into
  ``gpus_per_node`` so that a later ``run.env.gpus_per_node=N`` is not shadowed
  by a stale process count (:func:`fold_profile_alias`).
- In the merged run environment (recipe YAML or command line)
  ``nproc_per_node`` names torchrun's processes per node; a ``gpus_per_node``
  given on the command line wins over an ``nproc_per_node`` from a lower layer
  (:func:`drop_shadowed_alias`), unless it is 0 (a CPU cluster keeps its count).
- torchrun starts :func:`torchrun_processes` workers per node: ``nproc_per_node``,
  else ``gpus_per_node`` when it is above 0, else ``ntasks_per_node``, else 1.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from typing import Any

from nemo_runspec.errors import EnvFileError


def fold_profile_alias(layer: dict[str, Any], *, profile: str, path: str | os.PathLike[str] | None = None,
                       line: int | None = None) -> dict[str, Any]:
    """One profile table with ``nproc_per_node`` folded into ``gpus_per_node``.

    ``path``/``line`` locate ``nproc_per_node`` for the error when the two disagree.
    """
    nproc, gpus = layer.get("nproc_per_node"), layer.get("gpus_per_node")
    if nproc is None and gpus is None:
        return layer
    if gpus == 0 and nproc:  # a CPU cluster: no GPUs allocated, nproc_per_node processes per node
        return layer
    if nproc is not None and gpus is not None and nproc != gpus:
        raise EnvFileError(
            f"[{profile}] sets nproc_per_node = {nproc} and gpus_per_node = {gpus}; "
            "nproc_per_node is an alias of gpus_per_node, so they must agree",
            path=path, line=line, key="nproc_per_node", hint="keep only gpus_per_node",
        )
    folded = dict(layer)
    folded["gpus_per_node"] = gpus if gpus is not None else nproc
    folded.pop("nproc_per_node", None)
    return folded


def drop_shadowed_alias(env: MutableMapping[str, Any], sources: Mapping[str, str],
                        winner: str) -> None:
    """Drop ``nproc_per_node`` when ``gpus_per_node`` came from the ``winner`` layer and it did not.

    Kept when the winning ``gpus_per_node`` is 0: on a CPU cluster ``nproc_per_node`` is
    the process count, not a GPU alias (docs/execution.md), so ``run.env.gpus_per_node=0``
    on a profile with ``nproc_per_node = 2`` still starts 2 processes per node.
    """
    if ("nproc_per_node" in env and "gpus_per_node" in env
            and sources.get("gpus_per_node") == winner and sources.get("nproc_per_node") != winner
            and str(env["gpus_per_node"]).strip() not in ("0", "0.0")):
        del env["nproc_per_node"]


def torchrun_processes(values: Mapping[str, Any], gpus: int) -> int:
    """Workers torchrun starts on each node of a cluster job (see the module docstring)."""
    ntasks = int(values.get("ntasks_per_node") or 1)
    return int(values.get("nproc_per_node") or (gpus if gpus > 0 else ntasks))


def requested_processes(values: Mapping[str, Any]) -> int | None:
    """Processes per node asked for explicitly (``nproc_per_node``, else ``gpus_per_node``)."""
    wanted = values.get("nproc_per_node") or values.get("gpus_per_node")
    return int(wanted) if wanted else None
