"""The first thing a native job does: read the library versions installed in its image and
check them against the compatibility table, before anything is imported or built.

Reading a version imports nothing: the package is located with ``find_spec`` (its
``__init__``, which for Megatron-Bridge pulls in transformer-engine and takes tens of
seconds, is not run) and its ``package_info.py`` is parsed; a package without one
falls back to its installed distribution metadata. :func:`gate` then decides:

- the image is in the table but not for this stage (``nemo:25.11``: no nano3 recipe):
  one line naming the image, the version found and the images to use instead;
- the installed version is outside every API line this recipe supports: the same;
- a ``recipe._target_`` naming a nano3 recipe the installed release lacks: one line
  naming the key (a ``-c`` config / override fix);
- the version differs from the table's row but another supported line covers it: a
  ``warning:`` line, and the job runs with that line's API;
- an image the table does not list: a ``note:`` line, then the same.

A problem is a :class:`~nemo_runspec.errors.ConfigError` (exit 2), or, when the config
allows the CPU fallback (``fallback.enabled: auto``), a note and the fallback.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

from nemo_runspec.errors import ConfigError

from .release import Found, installed_version
from .versions import STAGE_LIBRARY, ImageRow, normalize_image, row_for, rows_for_stage

__all__ = ["Found", "bridge_line_if_native", "check", "check_evaluator", "gate", "installed_version", "job_image",
           "likely_backend"]

#: container_image values that mean "no container"
NO_IMAGE = ("", "none", "null")


def job_image(cfg: Any) -> str | None:
    """The image the job was launched in (``run.env.container_image``), or None (bare metal)."""
    from omegaconf import OmegaConf

    value = OmegaConf.select(cfg, "run.env.container_image", default=None) if not isinstance(cfg, dict) else \
        ((cfg.get("run") or {}).get("env") or {}).get("container_image")
    if value is None or str(value).strip().lower() in NO_IMAGE:
        return None
    return normalize_image(str(value))


def lines_of(dist: str) -> Any:
    """The API-line module of ``dist`` (``line_for``, ``supported_range``)."""
    if dist == "megatron-bridge":
        from . import bridge_lines
        return bridge_lines
    from . import rl_lines
    return rl_lines


def _instead(stage: str, image: str | None, default_image: str | None) -> str:
    """The fix: the recipe's own image and the newest one for the stage (not the one that failed)."""
    candidates = [normalize_image(default_image)] if default_image else []
    candidates += [row.image for row in rows_for_stage(stage)[-1:]]
    usable = [c for c in dict.fromkeys(candidates) if c != image and (r := row_for(c)) and stage in r.stages]
    where = " or ".join(usable) or "an image of the table in docs/training.md"
    return (f"run it in {where} (run.env.container_image=IMAGE, or container_image in the env.toml profile), "
            "or use -c tiny for the CPU fallback")


def check(stage: str, cfg: Any, *, default_image: str | None = None,
          find: Any = installed_version) -> tuple[Any, list[str]]:
    """``(line, messages)`` for a native ``stage`` job: the API line of the installed library
    and the ``warning:``/``note:`` lines to print. Raises :class:`ConfigError` (one line)
    when the image or the version cannot serve this recipe. ``(None, [])`` when the
    library is not installed (the backend choice reports that)."""
    dist = STAGE_LIBRARY[stage]
    found = find(dist)
    if found is None:
        return None, []
    image = job_image(cfg)
    row: ImageRow | None = row_for(image)
    where = f"image {image}" if image else "this job (no container image)"
    lines = lines_of(dist)
    if row is not None and stage not in row.stages:
        raise ConfigError(f"nano3/{stage}: {where} is not for this recipe: {row.why_not} (found {dist} {found.version})",
                          key="run.env.container_image", hint=_instead(stage, image, default_image))
    line = lines.line_for(found.version)
    if line is None:
        raise ConfigError(f"nano3/{stage}: {where} has {dist} {found.version}; this recipe supports {dist} "
                          f"{lines.supported_range()}", key="run.env.container_image",
                          hint=_instead(stage, image, default_image))
    messages: list[str] = []
    expected = row.versions.get(dist) if row is not None else None
    if row is None:
        messages.append(f"note: nano3/{stage}: {where} is not in the compatibility table "
                        f"(nemotron.training.versions); found {dist} {found.version}: using the {line.name} API")
    elif expected and lines.line_for(expected) is not line:
        messages.append(f"warning: nano3/{stage}: the compatibility table says {image} has {dist} {expected}, "
                        f"found {found.version}: using the {line.name} API")
    if dist == "megatron-bridge" and stage in ("pretrain", "sft"):
        from omegaconf import OmegaConf

        from .megatron_bridge import recipe_for

        raw = cfg if isinstance(cfg, dict) else OmegaConf.to_container(cfg, resolve=False)
        recipe_for(stage, raw, line)  # a nano3 recipe this release lacks: one line naming recipe._target_
    return line, messages


def check_evaluator(find: Any = installed_version) -> None:
    """The eval stage's NeMo Evaluator line (:data:`~nemotron.training.versions.EVALUATOR_LAUNCHER`):
    a one-line :class:`ConfigError` when the launcher, or the ``nemo-evaluator`` it runs on, is
    of another line (``nel`` 0.3 replaced the launcher with a new config)."""
    from .release import in_range
    from .versions import EVALUATOR_CORE, EVALUATOR_LAUNCHER

    fix = "pip install 'nemo-evaluator-launcher>=0.2.6,<0.3' (it brings nemo-evaluator 0.2.x), or the CPU fallback: -c tiny"
    for dist, (since, until) in (("nemo-evaluator-launcher", EVALUATOR_LAUNCHER), ("nemo-evaluator", EVALUATOR_CORE)):
        found = find(dist)
        if found is not None and not in_range(found.version, since, until):
            raise ConfigError(f"nano3/eval: {dist} {found.version} is installed; this recipe writes the run config of "
                              f"nemo-evaluator-launcher {since} to <{until} (on nemo-evaluator <{EVALUATOR_CORE[1]}); "
                              "NeMo Evaluator 0.3 replaced the launcher with `nel eval run` and a new config",
                              hint=fix)


def fallback_allowed(cfg: Any) -> bool:
    """The config lets the CPU fallback run when the native backend cannot (``fallback:`` with
    ``enabled`` not false, ``backend`` not ``native``) and torch is importable."""
    fb = cfg.get("fallback")
    if str(cfg.get("backend") or "auto") == "native" or fb is None or fb.get("enabled", "auto") is False:
        return False
    return importlib.util.find_spec("torch") is not None


def likely_backend(cfg: Any, native_found: bool) -> str | None:
    """The backend :func:`nemotron.training.entry.choose_backend` will pick, told without importing
    the native library: ``native`` when it and what it needs are installed (``native_found``),
    else ``torch`` where the config allows the fallback, else None (missing)."""
    if str(cfg.get("backend") or "auto") == "torch" or (cfg.get("fallback") or {}).get("enabled") is True:
        return "torch"
    if native_found:
        return "native"
    return "torch" if fallback_allowed(cfg) else None


def bridge_line_if_native(stage: str, backend: str | None) -> Any:
    """The installed Megatron-Bridge line when ``backend`` is native for a pretrain/SFT job
    (its recipe may take the reference's ``recipe.*`` arguments), else None."""
    if backend != "native" or stage not in ("pretrain", "sft"):
        return None
    from . import bridge_lines

    found = installed_version("megatron-bridge")
    return bridge_lines.line_for(found.version) if found else None


def gate(stage: str, cfg: Any, *, native_found: bool, default_image: str | None = None) -> str | None:
    """Check the installed versions for a job that would run natively (``native_found``: the
    library and what it needs are installed; the caller's ``find_spec`` test); returns
    ``"torch"`` when a problem sends it to the CPU fallback its config allows, else None (go
    on). Raises the one-line :class:`ConfigError` otherwise. Prints its notes and warnings."""
    forced = str(cfg.get("backend") or "auto") == "torch" or (cfg.get("fallback") or {}).get("enabled") is True
    if forced or stage not in STAGE_LIBRARY or not native_found:
        return None
    try:
        _line, messages = check(stage, cfg, default_image=default_image)
    except ConfigError as exc:
        if not fallback_allowed(cfg):
            raise  # every rank stops with it
        messages, decision = [f"note: {exc}; the config allows the CPU fallback: using it"], "torch"
    else:
        decision = None
    from nemo_runspec.runtime.ranks import global_rank

    if global_rank() == 0:  # the same on every rank: said once
        for message in messages:
            print(message, file=sys.stderr, flush=True)
    return decision
