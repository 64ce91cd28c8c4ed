"""Which rank this process is, whatever launched it (torchrun, srun, mpirun).

One rule for every "only one rank does this" decision: resolving artifacts,
publishing data-prep output, publishing checkpoints.
"""

from __future__ import annotations

import os

#: Environment variables that carry a process's global rank (first one set wins).
RANK_VARS = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")


def global_rank() -> int:
    """This process's global rank (0 when not launched as one of several ranks)."""
    for var in RANK_VARS:
        value = os.environ.get(var, "").strip()
        if value.isdigit():
            return int(value)
    return 0
