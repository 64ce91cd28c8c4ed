"""When a job logs to W&B: the one rule the CLI and the job both apply.

The CLI asks it to decide whether a job gets the W&B API key and ``WANDB_*``
settings (:func:`nemo_runspec.execution.split_env_vars`); the training job asks it
whether to start a W&B run (:mod:`nemotron.training.wandb_logging`). Both read
the same config (the job config the CLI compiled is the ``train.yaml`` the job
loads), so they agree by construction (tested for every stage).

W&B is on for a stage config when, in this order:

1. ``run.wandb`` is ``false``, or has ``enabled: false``: **off**, whatever else says;
2. the stage's own backend form turns it on:

   - ``pretrain``/``sft`` (Megatron-Bridge's ``LoggerConfig``): ``logger.wandb_project`` set;
   - ``rl`` (NeMo-RL's logger config): ``logger.wandb_enabled: true``;
   - any other stage (a data prep, an evaluation, a user's own script, whose
     form is not known here): either of the two;

3. ``run.wandb`` has ``enabled: true``, or no ``enabled`` and a ``project``: **on**;
4. otherwise off.

The other form's key in a known stage (``logger.wandb_project`` in an RL config) and
a top-level ``wandb:`` section switch nothing: neither backend reads them.

The stage of a job is the one its recipe script states (``entry.main("rl", ...)``);
on the CLI side, where only the recipe name is known, it is the last part of a
two-part name (``nano3/rl`` -> ``rl``; :func:`stage_of`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nemo_runspec.runtime.dotted import lookup

#: the key that turns W&B on in each known stage's own backend form
STAGE_SWITCH = {"pretrain": "logger.wandb_project", "sft": "logger.wandb_project", "rl": "logger.wandb_enabled"}


def stage_of(recipe_name: str | None) -> str | None:
    """The training stage of a recipe name: ``"nano3/pretrain"`` -> ``"pretrain"``; None for any
    name that is not ``FAMILY/STAGE`` with a stage of :data:`STAGE_SWITCH` (``nano3/data/prep/rl``)."""
    parts = str(recipe_name or "").split("/")
    return parts[1] if len(parts) == 2 and parts[1] in STAGE_SWITCH else None


def wandb_view(cfg: Any) -> dict[str, Any]:
    """The two parts of a config the rule reads, ``run.wandb`` and ``logger``, as plain
    values (interpolations in them resolved; nothing else is resolved, so no
    ``${art:...}`` lookup happens). ``cfg`` is a mapping or an OmegaConf DictConfig."""
    from omegaconf import DictConfig, OmegaConf

    def plain(node: Any) -> Any:
        return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node

    if isinstance(cfg, DictConfig):
        return {"run": {"wandb": plain(OmegaConf.select(cfg, "run.wandb"))},
                "logger": plain(OmegaConf.select(cfg, "logger"))}
    run = cfg.get("run") if isinstance(cfg, Mapping) else None
    return {"run": {"wandb": run.get("wandb") if isinstance(run, Mapping) else None},
            "logger": cfg.get("logger") if isinstance(cfg, Mapping) else None}


def wandb_switch(view: Mapping[str, Any], stage: str | None) -> str | None:
    """The config key that turns W&B on for ``stage`` (see the module docstring), or None when off.

    ``view`` is :func:`wandb_view` of the config (or any mapping with plain ``run.wandb``
    and ``logger``); ``stage`` is ``pretrain``, ``sft``, ``rl`` or anything else (unknown).
    """
    run = lookup(view, "run.wandb")
    if run is False or (isinstance(run, Mapping) and run.get("enabled") is False):
        return None
    switches = [STAGE_SWITCH[stage]] if stage in STAGE_SWITCH else list(dict.fromkeys(STAGE_SWITCH.values()))
    for key in switches:
        value = lookup(view, key)
        if (value is True) if key == "logger.wandb_enabled" else (value not in (None, "", False)):
            return key
    if run is True:
        return "run.wandb"
    if isinstance(run, Mapping) and (run.get("enabled") is True
                                     or (run.get("enabled") is None and run.get("project") not in (None, ""))):
        return "run.wandb"
    return None
