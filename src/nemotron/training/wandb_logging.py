"""W&B run logging of the training stages: one rule for when it is on and with which
settings, mapped onto each backend.

On when the stage config turns it on, in the form of its native backend, or in
the launcher's ``run.wandb`` -- the rule of :mod:`nemo_runspec.runtime.wandb_switch`, which
the CLI applies too when it decides whether the job gets the API key:

- pretrain / SFT (Megatron-Bridge's ``LoggerConfig``): ``logger.wandb_project``;
- RL (NeMo-RL's logger config): ``logger.wandb_enabled: true``;
- any stage: ``run.wandb`` with ``enabled: true`` or a ``project``
  (``run.wandb: false`` or ``run.wandb.enabled: false`` turns it off, whatever
  the ``logger`` keys say).

The settings (project, entity, run name, save dir) come from the config first
(``run.wandb.*``, then the stage's own ``logger`` keys), then from the job's
``WANDB_PROJECT``/``WANDB_ENTITY``/``WANDB_NAME``, which the CLI sets from env.toml
``[wandb]``. ``WANDB_MODE``, ``WANDB_RUN_GROUP``, ``WANDB_TAGS`` and the API key
reach wandb as environment variables and are read by wandb itself; the key is
never in a config.

- the CPU fallback: :class:`FallbackRun` logs ``train/loss``, ``train/lr``,
  ``train/tokens_per_sec`` at every printed step and ``eval/loss`` at every eval;
- Megatron-Bridge: :func:`megatron_bridge_logger` (``logger.wandb_project``,
  ``wandb_entity``, ``wandb_exp_name``, ``wandb_save_dir`` of its ``LoggerConfig``);
- NeMo-RL: :func:`nemo_rl_logger` (``logger.wandb_enabled`` and ``logger.wandb``,
  which NeMo-RL v0.4.0 passes to ``wandb.init(**cfg["wandb"], dir=...)``).

``wandb`` is imported only when a run starts; missing, that is a one-line error
naming the ``nemotron[wandb]`` extra.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nemo_runspec.errors import ConfigError
from nemo_runspec.runtime.dotted import lookup
from nemo_runspec.runtime.wandb_switch import wandb_switch

EXTRA = "nemotron[wandb]"


@dataclass(frozen=True)
class WandbSettings:
    """Where a stage's metrics go in W&B."""

    project: str | None
    entity: str | None = None
    name: str | None = None
    save_dir: str | None = None
    switch: str = "logger.wandb_project"
    """The config key that turned W&B on (named in errors)."""


def _first(*values: Any) -> str | None:
    for v in values:
        if v not in (None, ""):
            return str(v)
    return None


def wandb_settings(cfg: Mapping[str, Any], kind: str,
                   environ: Mapping[str, str] | None = None) -> WandbSettings | None:
    """The W&B settings of a resolved stage config ``cfg`` (``kind``: pretrain, sft or rl), or None when off
    (the rule of :func:`nemo_runspec.runtime.wandb_switch.wandb_switch`, which the CLI applies too)."""
    environ = os.environ if environ is None else environ
    switch = wandb_switch(cfg, kind)
    if switch is None:
        return None
    run = lookup(cfg, "run.wandb")
    run = run if isinstance(run, Mapping) else {}
    if kind == "rl":
        own = {"project": lookup(cfg, "logger.wandb.project"), "entity": lookup(cfg, "logger.wandb.entity"),
               "name": lookup(cfg, "logger.wandb.name"), "save_dir": None}
    else:
        own = {"project": lookup(cfg, "logger.wandb_project"), "entity": lookup(cfg, "logger.wandb_entity"),
               "name": lookup(cfg, "logger.wandb_exp_name"), "save_dir": lookup(cfg, "logger.wandb_save_dir")}
    return WandbSettings(
        project=_first(run.get("project"), own["project"], environ.get("WANDB_PROJECT")),
        entity=_first(run.get("entity"), own["entity"], environ.get("WANDB_ENTITY")),
        name=_first(run.get("name"), own["name"], environ.get("WANDB_NAME")),
        save_dir=_first(own["save_dir"]),
        switch=switch,
    )


def megatron_bridge_logger(settings: WandbSettings) -> dict[str, str]:
    """Megatron-Bridge ``LoggerConfig`` fields for ``settings`` (unset ones left out)."""
    fields = {"wandb_project": settings.project, "wandb_entity": settings.entity,
              "wandb_exp_name": settings.name, "wandb_save_dir": settings.save_dir}
    return {k: v for k, v in fields.items() if v is not None}


def nemo_rl_logger(settings: WandbSettings, current: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """NeMo-RL's ``logger`` keys for ``settings``: ``wandb_enabled`` and the ``wandb`` section
    (``current`` is the config's own ``logger.wandb``; its other keys are kept)."""
    section = dict(current or {})
    for key, value in (("project", settings.project), ("entity", settings.entity), ("name", settings.name)):
        if value is not None:
            section[key] = value
    return {"wandb_enabled": True, "wandb": section}


def apply_to_native(kind: str, container: dict[str, Any], settings: WandbSettings | None) -> dict[str, Any]:
    """Put ``settings`` into the native backend's config ``container`` (in place; returned)."""
    if settings is None:
        return container
    logger = container.setdefault("logger", {})
    if kind == "rl":
        logger.update(nemo_rl_logger(settings, logger.get("wandb")))
    else:
        logger.update(megatron_bridge_logger(settings))
    return container


def import_wandb(settings: WandbSettings) -> Any:
    """``import wandb``, or a one-line ConfigError naming the extra and the key that turned W&B on."""
    try:
        import wandb
    except ImportError:
        raise ConfigError(f"W&B logging is on ({settings.switch}) but the wandb package is not installed here",
                          key=settings.switch,
                          hint=f"pip install '{EXTRA}', or turn it off: {settings.switch}=null") from None
    return wandb


class FallbackRun:
    """The CPU fallback's W&B run (rank 0 only): start, :meth:`log` metrics, :meth:`finish`."""

    def __init__(self, settings: WandbSettings, kind: str, config: Mapping[str, Any], directory: str) -> None:
        wandb = import_wandb(settings)
        Path(directory).mkdir(parents=True, exist_ok=True)
        init = dict(project=settings.project, entity=settings.entity, name=settings.name,
                    dir=directory, job_type=kind, config=dict(config), reinit="create_new")
        try:
            try:
                self.run = wandb.init(**init)
            except Exception as exc:
                if "api key" not in str(exc).lower():
                    raise
                # No key where the job runs: keep the metrics (offline) rather than lose the
                # run or stop the training; they upload later with `wandb sync`.
                print(f"warning: [{kind}] no W&B API key here ({settings.switch} turned W&B on): "
                      "logging offline instead", file=sys.stderr, flush=True)
                self.run = wandb.init(**init, mode="offline")
        except Exception as exc:  # noqa: BLE001 - unreachable, refused: one line
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(f"cannot start the W&B run: {msg}", key=settings.switch,
                              hint="set the API key (env.toml [wandb] api_key_env), or [wandb] mode = "
                                   '"offline" and `wandb sync` later') from None
        self.mode = str(getattr(self.run.settings, "mode", "") or "")
        where = f"{settings.entity + '/' if settings.entity else ''}{settings.project or '(default project)'}"
        note = f"; offline: upload with `wandb sync {Path(self.run.dir).parent}`" if self.mode == "offline" else ""
        print(f"[{kind}] W&B: logging to {where}, run {self.run.name or self.run.id}{note}", flush=True)

    def log(self, step: int, metrics: Mapping[str, float]) -> None:
        """Log ``metrics`` at training step ``step``."""
        self.run.log(dict(metrics), step=step)

    def finish(self, exit_code: int = 0) -> None:
        """End the run (the offline files are complete after this)."""
        try:
            self.run.finish(exit_code=exit_code)
        except Exception as exc:  # noqa: BLE001 - the training result stands
            print(f"warning: W&B run did not finish cleanly: {exc}", file=sys.stderr)
