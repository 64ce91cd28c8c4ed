"""sbatch templates shipped with nemo_runspec, found by name.

``ray_slurm.sub.j2`` is our Ray-on-Slurm template
(:mod:`nemo_runspec.execution.ray`). The reference system calls its Ray CPU
template ``ray_cpu.sub.j2``; that name resolves to the same file
(:data:`TEMPLATE_ALIASES`), so there is one template, not two copies.
"""

from __future__ import annotations

from pathlib import Path

TEMPLATE_DIR = Path(__file__).resolve().parent

TEMPLATE_ALIASES: dict[str, str] = {"ray_cpu.sub.j2": "ray_slurm.sub.j2"}
"""Reference template names -> ours."""


def template_path(name: str) -> Path:
    """Absolute path of the shipped template ``name`` (a reference alias works too).

    Raises FileNotFoundError naming the templates there are.
    """
    path = TEMPLATE_DIR / TEMPLATE_ALIASES.get(name, name)
    if not path.is_file() or path.suffix != ".j2":
        known = sorted({p.name for p in TEMPLATE_DIR.glob("*.j2")} | set(TEMPLATE_ALIASES))
        raise FileNotFoundError(f"no template {name!r} in nemo_runspec (known: {', '.join(known)})")
    return path
