"""The scale matrix as a table: ``nemotron nano3 pretrain --scales``, ``nemotron runspec scales``."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from nemo_runspec.spec.models import Runspec


def matrix_rows(spec: Runspec) -> list[list[str]]:
    """One row per entry: configs, GPU types, node counts, precisions, GPUs per node, overrides, note."""
    rows = []
    for e in spec.scales:
        nodes = ", ".join(str(n) for n in e.nodes) + ("" if e.exact else ", and powers of two above")
        over = " ".join(f"{k}={json.dumps(v)}" for k, v in e.overrides.items()) or "-"
        if e.image:
            over = f"image={e.image} " + (over if over != "-" else "")
        rows.append([", ".join(e.configs) or "all", ", ".join(e.gpu_types), nodes, ", ".join(e.precisions),
                     "-" if e.gpus_per_node is None else str(e.gpus_per_node), over.strip(), e.note or "-"])
    return rows


def print_matrix(spec: Runspec, *, as_json: bool = False, out: TextIO | None = None) -> int:
    """Print ``spec``'s scale matrix; returns 0 (a recipe without one says so)."""
    out = out or sys.stdout
    if as_json:
        out.write(json.dumps({"recipe": spec.name, "script": str(spec.script_path),
                              "scales": [e.to_dict() for e in spec.scales]}, indent=1) + "\n")
        return 0
    if not spec.scales:
        out.write(f"{spec.name} declares no scale matrix ({spec.script_path}: no [[tool.runspec.scales]]); "
                  "every scale is accepted\n")
        return 0
    out.write(f"{spec.name}: supported scales ({spec.script_path}, [[tool.runspec.scales]])\n")
    header = ["CONFIGS", "GPU TYPES", "NODES", "PRECISIONS", "GPUS/NODE", "OVERRIDES", "SOURCE"]
    rows = [header, *matrix_rows(spec)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for r in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")
    return 0
