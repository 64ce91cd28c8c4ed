"""A compiled job's scale-matrix cell: checked, its overrides applied, where they came from kept.

Precedence of a config key: the recipe YAML < the cell's ``overrides`` < the
command line (an override the user typed is never replaced by the matrix). The
cell's ``image`` replaces only the runspec's image (a recipe YAML, profile or
command line that names one wins). The job config records it all in ``run.scale``
(``cell``, ``overrides`` applied, ``from``) and ``run.env_sources`` says
``scale matrix ...`` for an image it set, so ``--dry-run`` shows where each
value came from.

Checked when the job is submitted or run with a profile and the recipe has a
matrix for the job's config: a job outside it is a one-line error naming the
nearest supported cells, or, with ``--allow-untested-scale``, one warning line.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from nemo_runspec.errors import ConfigError
from nemo_runspec.scales.select import entries_for, find, nearest, where_of

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from nemo_runspec.cmdline.context import GlobalContext
    from nemo_runspec.spec.models import Runspec

SOURCE = "scale matrix"


def _override_keys(overrides: list[str]) -> set[str]:
    keys = set()
    for raw in overrides:
        body = raw.lstrip("+~")
        keys.add(body.partition("=")[0].strip())
    return keys


def apply_scale(spec: Runspec, job_config: DictConfig, ctx: GlobalContext) -> DictConfig:
    """``job_config`` with the cell of its scale applied (see the module docstring);
    unchanged when the job has no profile or the recipe no matrix for its config."""
    if ctx.profile is None or not spec.scales:
        return job_config
    run = job_config.run
    config = (run.get("cli") or {}).get("config")
    entries = entries_for(spec.scales, config)
    if not entries:
        return job_config
    from omegaconf import OmegaConf

    run_env = OmegaConf.to_container(run.env, resolve=False) if run.get("env") is not None else {}
    where = where_of(run_env)  # type: ignore[arg-type]
    script = spec.script_path.name
    found = find(entries, where)
    data = OmegaConf.to_container(job_config, resolve=False)
    assert isinstance(data, dict)
    if found is None:
        cells = ", ".join(str(c) for c in nearest(entries, where))
        problem = (f"{spec.name} (config {config}) is not known to work at {where}: its scale matrix "
                   f"({script}, [[tool.runspec.scales]]) has no such cell")
        if not ctx.allow_untested_scale:
            raise ConfigError(problem, key="run.env.nodes",
                              hint=f"nearest supported: {cells}; --allow-untested-scale runs it anyway")
        print(f"warning: {problem}; running it anyway (--allow-untested-scale; nearest supported: {cells})",
              file=sys.stderr)
        data["run"]["scale"] = {"cell": None, "untested": True, "from": f"{SOURCE} of {script}"}
        return OmegaConf.create(data)
    entry, cell = found
    typed = _override_keys(list((run.get("cli") or {}).get("overrides") or []))
    applied = {k: v for k, v in entry.overrides.items() if k not in typed}
    if applied:
        from nemo_runspec.config.overrides import apply_to_data

        apply_to_data(data, [f"{k}={json.dumps(v)}" for k, v in applied.items()],
                      source=f"the {SOURCE} of {script} (scales[{entry.index}])")
    sources = data["run"].setdefault("env_sources", {})
    if entry.image and str(sources.get("container_image", "runspec")).startswith("runspec"):
        data["run"].setdefault("env", {})["container_image"] = entry.image
        sources["container_image"] = f"{SOURCE} {script} scales[{entry.index}] ({cell.gpu_type})"
    if where.gpu_type is None and (applied or entry.image):  # the guess changes the job: say so
        print(f"note: the profile sets no gpu_type; {spec.name} uses the {cell} cell of its scale matrix "
              "(set gpu_type in the profile to pick the cell of your GPUs)", file=sys.stderr)
    data["run"]["scale"] = {
        "cell": {"gpu_type": cell.gpu_type, "nodes": cell.nodes, "precision": cell.precision},
        "overrides": applied, "from": f"{SOURCE} of {script} (scales[{entry.index}])",
        **({"note": entry.note} if entry.note else {})}
    return OmegaConf.create(data)
