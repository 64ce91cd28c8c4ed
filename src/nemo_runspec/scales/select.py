"""The scale-matrix cell of a job, or the nearest cells when it has none.

A job's coordinates come from its merged ``run.env``: ``gpu_type`` (an env.toml
profile key; ``cpu`` when the job has no GPUs, ``gpus_per_node = 0``), ``nodes``
and ``precision`` (a profile key too; by default the first precision its GPU
type and node count list). Without ``gpu_type`` on a GPU job, any GPU type
matches (the first entry that fits is used) and a note says to set it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nemo_runspec.spec.scales import Cell, ScaleEntry


@dataclass(frozen=True)
class Where:
    """Where a job sits: GPU type (None: not said), nodes, precision (None: the default)."""

    gpu_type: str | None
    nodes: int
    precision: str | None
    gpus_per_node: int | None = None

    def __str__(self) -> str:
        gpus = self.gpu_type or "GPUs of an unstated type"
        per = f" of {self.gpus_per_node} GPUs" if self.gpus_per_node and self.gpu_type != "cpu" else ""
        return f"{gpus} x {self.nodes} node{'s' if self.nodes != 1 else ''}{per}" + \
            (f" {self.precision}" if self.precision else "")


def where_of(run_env: Mapping[str, Any]) -> Where:
    """The job's coordinates in the matrix, from its ``run.env``."""
    gpu = run_env.get("gpu_type")
    gpn = run_env.get("gpus_per_node")
    if gpu is None and gpn == 0:
        gpu = "cpu"
    try:
        nodes = int(run_env.get("nodes") or 1)
    except (TypeError, ValueError):
        nodes = 1
    precision = run_env.get("precision")
    return Where(str(gpu) if gpu else None, nodes, str(precision) if precision else None,
                 gpn if isinstance(gpn, int) and not isinstance(gpn, bool) else None)


def entries_for(entries: Sequence[ScaleEntry], config: str | None) -> list[ScaleEntry]:
    """The entries that apply to config ``config``."""
    return [e for e in entries if e.for_config(config)]


def find(entries: Sequence[ScaleEntry], where: Where) -> tuple[ScaleEntry, Cell] | None:
    """The first entry (and its cell) that holds ``where``, or None."""
    for entry in entries:
        if where.gpu_type is not None and where.gpu_type not in entry.gpu_types:
            continue
        if not entry.has_nodes(where.nodes):
            continue
        if where.precision is not None and where.precision not in entry.precisions:
            continue
        if None not in (entry.gpus_per_node, where.gpus_per_node) and entry.gpus_per_node != where.gpus_per_node:
            continue
        gpu = where.gpu_type or entry.gpu_types[0]
        return entry, Cell(gpu, where.nodes, where.precision or entry.precisions[0])
    return None


def nearest(entries: Sequence[ScaleEntry], where: Where, n: int = 3) -> list[Cell]:
    """The ``n`` supported cells closest to ``where``: same GPU type and precision first,
    then by how far the node count is (in powers of two)."""
    cells = list(dict.fromkeys(c for e in entries for c in e.cells()))

    def distance(cell: Cell) -> tuple[int, int, float, int]:
        return (0 if where.gpu_type in (None, cell.gpu_type) else 1,
                0 if where.precision in (None, cell.precision) else 1,
                abs(math.log2(cell.nodes) - math.log2(max(where.nodes, 1))), cell.nodes)

    return sorted(cells, key=distance)[:n]
