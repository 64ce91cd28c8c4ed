"""Backend choice and the ``train.py`` entry point shared by the nano3 recipe scripts.

Backend rule (also in ``docs/training.md``):

1. ``backend: torch`` or ``fallback.enabled: true`` in the config -> the tiny torch fallback.
2. else, when the native backend (``megatron.bridge`` / ``nemo_rl``) is importable -> native.
3. else, when the config has a ``fallback:`` section whose ``enabled`` is not
   ``false`` (``auto``, the default) and torch is importable -> the fallback.
4. else the "not installed" message and exit code 3.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nemo_runspec.errors import ConfigError, ExecutionError, NemoRunspecError, raised_inside
from nemo_runspec.runtime.ranks import global_rank

from .reference_layout import REFERENCE_SFT_KEYS, reference_sft_layout  # noqa: F401 - entry's names too
from .resilience import (
    EXIT_REQUEUE,  # a stopped, checkpointed run to be requeued (docs/resilience.md)
)

EXIT_BACKEND_MISSING = 3
BACKENDS = ("auto", "native", "torch")
DATA_KEYS = {"pretrain": "data.data_path", "sft": "data.data_path", "rl": "data.train_data_path"}
#: What a native backend imports first; absent, the (slow) probe import is skipped.
NATIVE_NEEDS = {"megatron.bridge": ("transformer_engine",)}
#: Config sections that belong to the launcher, not to the native backend.
LAUNCHER_KEYS = ("run", "fallback", "publish")


def importable(module: str) -> bool:
    """True when ``module`` (dotted) can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module.split(".")[0]) is not None and importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def native_usable(module: str) -> bool:
    """True when the native backend really imports here. Found but failing (the
    Megatron-Bridge wheel without transformer-engine, i.e. no GPU stack) is
    False, so the tiny configs use the CPU fallback (which says so when it starts)."""
    if not importable(module) or not all(importable(dep) for dep in NATIVE_NEEDS.get(module, ())):
        return False
    try:
        with warnings.catch_warnings():  # megatron-core warns about missing TE/Apex while it probes
            warnings.simplefilter("ignore")
            importlib.import_module(module)
    except Exception:  # noqa: BLE001 - any import failure means: not usable here
        return False
    return True


def choose_backend(cfg: Any, native_module: str) -> str:
    """``"native"``, ``"torch"`` or ``"missing"`` for a loaded config (see the module docstring)."""
    backend = str(cfg.get("backend") or "auto")
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}", key="backend", hint="use auto, native or torch")
    fb = cfg.get("fallback")
    enabled = fb.get("enabled", "auto") if fb is not None else None
    if enabled not in (True, False, "auto", None):
        raise ConfigError(f"fallback.enabled must be true, false or auto, got {enabled!r}", key="fallback.enabled")
    if backend == "torch" or enabled is True:
        return "torch" if importable("torch") else "missing"
    if native_usable(native_module):
        return "native"
    if backend != "native" and fb is not None and enabled is not False and importable("torch"):
        return "torch"
    return "missing"


def native_config(cfg: Any) -> dict[str, Any]:
    """The resolved config as a plain dict for the native backend, minus :data:`LAUNCHER_KEYS`
    (``publish`` included: the launcher publishes the checkpoint)."""
    from omegaconf import OmegaConf

    container = OmegaConf.to_container(cfg, resolve=True)
    for key in LAUNCHER_KEYS:
        container.pop(key, None)
    return container


def parse_args(description: str, argv: list[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    """``--config PATH`` plus any extra arguments (returned untouched)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", required=True, help="train config YAML written by the CLI")
    return parser.parse_known_args(argv)


def load_config(path: str, extra: list[str]) -> Any:
    """Load the YAML (merging a ``defaults:`` chain) and apply ``key=value`` extras as
    overrides, with the CLI's loader and grammar."""
    from nemo_runspec.config import load_config_file

    return load_config_file(path, [e for e in extra if "=" in e and not e.startswith("-")])


def job_dir() -> Path:
    """``$NEMOTRON_JOB_DIR``, else the current directory (where the CLI runs the script)."""
    return Path(os.environ.get("NEMOTRON_JOB_DIR") or os.getcwd())


def _handoff_dir() -> Path:
    base = job_dir()
    run_id = os.environ.get("TORCHELASTIC_RUN_ID") or os.environ.get("SLURM_JOB_ID") or "run"
    return base / f".artifacts-{run_id}"


def resolve_path_key(cfg: Any, dotted: str) -> str:
    """Resolve one config value that may use ``${art:...}``; multi-rank jobs resolve once on rank 0."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from nemo_runspec.config.resolvers import register_resolvers, resolve_artifacts_once

    register_resolvers()
    raw = OmegaConf.to_container(cfg, resolve=False)
    node: Any = raw
    for part in dotted.split("."):
        if not isinstance(node, dict) or node.get(part) is None:
            raise ConfigError(f"{dotted} is not set", key=dotted, hint="set it to the data-prep output dir")
        node = node[part]
    sub = OmegaConf.create({"run": raw.get("run") or {}, "value": node})
    try:
        if "${art:" in str(node) and int(os.environ.get("WORLD_SIZE", "1")) > 1:
            resolve_artifacts_once(sub, _handoff_dir())
        value = sub.value
    except OmegaConfBaseException as exc:
        cause = raised_inside(exc)
        if cause is not None:
            raise cause from None
        raise ConfigError(f"cannot resolve {dotted}: {exc}".splitlines()[0], key=dotted) from None
    path = Path(os.path.expanduser(str(value)))
    return str(path if path.is_absolute() else (Path.cwd() / path))


#: nemo-run's name of the job dir inside a container (and in bare-metal batch scripts)
NEMO_RUN_DIR = Path("/nemo_run")


def job_path(value: str) -> str:
    """A path of the config as the job sees it: relative ones are under the job dir, and
    so are ``/nemo_run/...`` ones where ``/nemo_run`` does not exist (a local run, a
    bare-metal Slurm job): nemo-run mounts the job dir there in containers, which is
    what configs written for the reference (``checkpoint.save: /nemo_run/...``) mean."""
    p = Path(os.path.expanduser(str(value)))
    n = len(NEMO_RUN_DIR.parts)
    if p.parts[:n] == NEMO_RUN_DIR.parts and not NEMO_RUN_DIR.is_dir():
        return str(job_dir().joinpath(*p.parts[n:]))
    return str(p if p.is_absolute() else job_dir() / p)


def _checkpoint_dir(cfg: Any, kind: str) -> str | None:
    key = ("checkpointing", "checkpoint_dir") if kind == "rl" else ("checkpoint", "save")
    section = cfg.get(key[0]) or {}
    fb = cfg.get("fallback") or {}
    value = fb.get("checkpoint_dir") or section.get(key[1])
    if not value:
        return None
    return job_path(str(value))


def data_key(cfg: Any, kind: str) -> str:
    """The config key naming the stage's data: :data:`DATA_KEYS`, or for pretraining in
    the reference's layout ``recipe.per_split_data_args_path`` (``.../blend.json``) when
    ``data.data_path`` is not set."""
    from omegaconf import OmegaConf

    raw = OmegaConf.to_container(cfg, resolve=False) if not isinstance(cfg, dict) else cfg
    key = DATA_KEYS[kind]
    if kind == "pretrain" and not (raw.get("data") or {}).get("data_path") \
            and (raw.get("recipe") or {}).get("per_split_data_args_path"):
        return "recipe.per_split_data_args_path"
    return key


def warn_unused_keys(cfg: Any, kind: str, config_path: str, *, recipe_line: Any = None) -> None:
    """One ``warning:`` line (rank 0) per key of the config this stage does not read
    (:func:`nemotron.training.megatron_bridge.unused_keys`; ``recipe_line``: the installed
    Megatron-Bridge line when the native backend will run, whose recipe may take ``recipe.*``)."""
    if kind not in ("pretrain", "sft") or global_rank() != 0:
        return
    from omegaconf import OmegaConf

    from .megatron_bridge import unused_keys

    for key, why in unused_keys(kind, OmegaConf.to_container(cfg, resolve=False), recipe_line=recipe_line):
        print(f"warning: {config_path}: key '{key}' means nothing to nano3/{kind} here ({why}); ignored",
              file=sys.stderr, flush=True)


def publish_checkpoint(cfg: Any, kind: str, config_path: str, *, backend: str) -> str | None:
    """Publish the checkpoint dir as the artifact ``publish.name`` (rank 0 only); returns
    what it was published as (``name:v3``), None when nothing was published.

    This is how stages hand models on: pretrain publishes e.g.
    ``nano3-pretrain-model-tiny``, which the SFT config names in ``run.model``.
    The checkpoint is registered by reference (job dirs are unique per run).
    """
    name = (cfg.get("publish") or {}).get("name")
    if not name or global_rank() != 0:
        return None
    ckpt = _checkpoint_dir(cfg, kind)
    if not ckpt or not Path(ckpt).exists():
        print(f"nano3/{kind}: nothing to publish as {name}: no checkpoint dir ({ckpt})", file=sys.stderr)
        return None
    from nemo_runspec.artifacts.registry import get_registry

    registry = get_registry()
    from .formats import produced

    fmt = produced(kind, "torch" if backend == "torch-fallback" else "native")
    art = registry.publish(name, ckpt, metadata={"kind": f"{kind}-model", "backend": backend, "format": fmt,
                                                  "config": str(config_path)})
    if art.version == 0:  # W&B offline: the version is assigned when the run is uploaded
        run = getattr(registry.backend, "last_offline_run", None)
        print(f"published {name} to an offline W&B run -> {art.path}  [upload: wandb sync {run}]", flush=True)
        return str(name)
    from .progress import say

    say(f"published {art.ref} (latest) -> {art.path}  [registry: {registry.location}]")
    return str(art.ref)


#: Where each stage names the model it starts from (``${art:model,path}`` in the nano3
#: configs): SFT the pretrain checkpoint, RL (NeMo-RL's policy) the SFT checkpoint.
INIT_KEYS = {"sft": "checkpoint.pretrained_checkpoint", "rl": "policy.model_name"}


def _pretrained_dir(cfg: Any, kind: str) -> str | None:
    """The previous stage's checkpoint this stage starts from: :data:`INIT_KEYS`. Unset,
    or ``fallback.init_from_pretrained: false``: from scratch. Set but unresolvable:
    a one-line warning, then from scratch, so the script also runs on its own (the CLI
    refuses a missing ``${art:...}`` before anything starts)."""
    key = INIT_KEYS.get(kind)
    if key is None or (cfg.get("fallback") or {}).get("init_from_pretrained") is False:
        return None
    from omegaconf import OmegaConf

    from nemo_runspec.runtime.dotted import lookup

    if not lookup(OmegaConf.to_container(cfg, resolve=False), key):
        return None
    try:
        return resolve_path_key(cfg, key)
    except NemoRunspecError as exc:
        print(f"warning: nano3/{kind}: training from scratch: {exc}", file=sys.stderr)
        return None


def run_fallback(kind: str, cfg: Any, report: Any = None) -> int:
    """Build the task for ``kind`` and train it with the tiny torch fallback; returns the exit code.
    ``report`` (a :class:`nemo_runspec.runtime.outcome.Report`) gets the run's summary line and figures."""
    from omegaconf import OmegaConf

    from . import progress
    from .loop import Settings, init_distributed, shutdown, train
    from .tasks import PretrainTask, RLSmokeTask, SFTTask

    fb = cfg.get("fallback")
    settings = Settings.from_config(OmegaConf.to_container(fb, resolve=True) if fb is not None else {})
    key = data_key(cfg, kind)
    data_path = resolve_path_key(cfg, key)
    if key == "recipe.per_split_data_args_path" and Path(data_path).suffix == ".json":
        data_path = str(Path(data_path).parent)  # the data-prep output dir holding blend.json
    if not Path(data_path).exists():
        raise ConfigError(f"training data not found: {data_path}", key=key,
                          hint=f"run `nemotron nano3 data prep {kind}` first or fix {key}")
    if kind == "pretrain":
        task: Any = PretrainTask(data_path, settings)
    elif kind == "sft":
        task = SFTTask(data_path, settings)
    else:
        tok = settings.extra.get("tokenizer")
        if tok and str(tok).startswith("pkg:"):
            from nemotron.data_prep.paths import resolve_pkg

            tok = resolve_pkg(str(tok))
        task = RLSmokeTask(data_path, settings, tok)
        print("[rl-smoke] NOTE: CPU smoke fallback, not RL: supervised warm-start on prompt->answer "
              "with greedy-decoding accuracy; use NeMo-RL for GRPO.", flush=True)
    init_from = _pretrained_dir(cfg, kind)
    wandb_run = start_wandb_run(cfg, kind, settings)
    dist = init_distributed(settings.device, settings.threads)
    log = progress.start(job_dir()) if dist.is_main else print  # progress.jsonl (nemotron report)
    code = 1
    try:
        summary = train(task, settings, _checkpoint_dir(cfg, kind), dist, init_from=init_from, log=log,
                        init_key=INIT_KEYS.get(kind, "checkpoint.pretrained_checkpoint"),
                        metrics=wandb_run.log if wandb_run is not None else None)
        code = EXIT_REQUEUE if summary.get("stopped") else 0
        if report is not None:
            message, figures = training_summary(summary)
            report.summary(message, **figures)
    finally:
        shutdown()
        if wandb_run is not None:
            wandb_run.finish(code)
    return code


#: the fallback's summary keys an outcome line carries as figures (docs/execution.md)
SUMMARY_FIGURES = ("steps", "tokens", "seconds", "initial_loss", "final_loss", "eval_loss")


def training_summary(summary: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The outcome's message and figures for the fallback's ``summary`` (:func:`~.loop.train`):
    its last line (``final loss ...``, or where it stopped for a requeue) and its numbers."""
    figures = {k: summary.get(k) for k in SUMMARY_FIGURES}
    figures.update({k: v for k, v in summary.items() if k not in figures and k not in ("steps_run", "stopped", "line")
                    and isinstance(v, int | float | str)})
    return str(summary.get("line") or ""), figures


def wandb_view(cfg: Any) -> dict[str, Any]:
    """The parts of a loaded config that say whether and where to log to W&B (``run.wandb``,
    ``logger``), resolved (:func:`nemo_runspec.runtime.wandb_switch.wandb_view`)."""
    from nemo_runspec.runtime.wandb_switch import wandb_view as view

    return view(cfg)


def start_wandb_run(cfg: Any, kind: str, settings: Any) -> Any:
    """The fallback's W&B run when the config turns W&B on (rank 0), else None
    (:mod:`nemotron.training.wandb_logging`)."""
    from dataclasses import asdict

    from .wandb_logging import FallbackRun, wandb_settings

    wb = wandb_settings(wandb_view(cfg), kind)
    if wb is None or global_rank() != 0:
        return None
    directory = wb.save_dir or os.environ.get("WANDB_DIR") or str(job_dir())
    return FallbackRun(wb, kind, {"stage": kind, "backend": "torch-fallback", "fallback": asdict(settings)},
                       job_path(directory))


def native_found(module: str) -> bool:
    """The native backend and what it imports first are installed (``find_spec``; nothing imported)."""
    return importable(module) and all(importable(dep) for dep in NATIVE_NEEDS.get(module, ()))


def native_version_gate(kind: str, cfg: Any, native_module: str, script: str) -> str | None:
    """:func:`nemotron.training.version_check.gate` with the recipe's runspec image as the
    suggested fix: ``"torch"`` (a version problem, the config allows the fallback), None
    (go on), or a one-line :class:`ConfigError`."""
    from nemo_runspec import parse
    from nemo_runspec.errors import NemoRunspecError

    from .version_check import gate

    try:  # the image only names the fix in a refusal: a script without a runspec must not stop the job
        image = parse(script).image
    except NemoRunspecError:
        image = None
    return gate(kind, cfg, native_found=native_found(native_module), default_image=image)


def main(kind: str, argv: list[str] | None, *, description: str, native_module: str, script: str,
         native_run: Callable[[dict[str, Any], list[str]], int],
         nothing_to_do: Callable[[Any], str | None] | None = None) -> int:
    """Entry point of a recipe ``train.py``: load config, choose the backend, run; returns the exit code.

    ``script`` is the recipe's own path (its runspec ``image`` is named when the
    native backend is missing); ``native_run`` gets :func:`native_config` and the
    ``key=value`` extras. ``nothing_to_do`` looks at the loaded config first: a line
    it returns is printed as the run's summary and the stage ends with 0.

    User errors print one ``error: ...`` line on stderr (exit 2 for config/data
    problems, 1 for failures while training); ``NEMOTRON_DEBUG=1`` re-raises.
    The last line is the outcome line (:mod:`nemo_runspec.runtime.outcome`).
    """
    from nemo_runspec.artifacts.pins import PIN_FILE_ENV
    from nemo_runspec.runtime import outcome

    if os.environ.get("SLURM_JOB_ID"):  # Slurm may requeue it: every attempt reads what the first resolved
        os.environ.setdefault(PIN_FILE_ENV, str(job_dir() / f".artifact-pins-{os.environ['SLURM_JOB_ID']}.json"))
    return outcome.run(f"nano3/{kind}", lambda report: _main(report, kind, argv, description=description,
                                                             native_module=native_module, script=script,
                                                             native_run=native_run, nothing_to_do=nothing_to_do))


def _main(report: Any, kind: str, argv: list[str] | None, *, description: str, native_module: str, script: str,
          native_run: Callable[[dict[str, Any], list[str]], int],
          nothing_to_do: Callable[[Any], str | None] | None = None) -> int:
    args, extra = parse_args(description, argv)
    debug = os.environ.get("NEMOTRON_DEBUG") == "1"
    name = f"nano3/{kind}"
    try:
        unknown = [e for e in extra if not ("=" in e and not e.startswith("-"))]
        if unknown:
            raise ConfigError(f"unknown argument(s) {' '.join(unknown)}",
                              hint="train.py takes --config PATH and key=value overrides")
        loaded = load_config(args.config, extra)
        said = nothing_to_do(loaded) if nothing_to_do is not None else None
        if said:
            print(said, flush=True)
            report.summary(said)
            return 0
        cfg = reference_sft_layout(loaded, kind)
        from .schema import MODELS, check_config

        if kind in MODELS:  # (convert's section is checked by the converter itself)
            check_config(cfg, kind, files=[args.config])  # a hand-edited train.yaml, before anything runs
        # first, before the (slow) native import: the image's library versions against the table,
        # then the starting model's format against what that backend loads
        from .formats import check_model_input
        from .version_check import bridge_line_if_native, likely_backend

        forced = native_version_gate(kind, cfg, native_module, script)
        likely = forced or likely_backend(cfg, native_found(native_module))
        warn_unused_keys(cfg, kind, args.config, recipe_line=bridge_line_if_native(kind, likely))
        if likely is not None:
            check_model_input(kind, cfg, likely, resolve=resolve_path_key)
        backend = forced or choose_backend(cfg, native_module)
        if backend == "native":
            from .wandb_logging import apply_to_native, wandb_settings

            container = apply_to_native(kind, native_config(cfg), wandb_settings(wandb_view(cfg), kind))
            code = native_run(container, extra)
            if code == 0:
                published = publish_checkpoint(cfg, kind, args.config, backend=native_module)
                report.summary(f"[{kind}] {native_module} finished"
                               + (f"; published {published}" if published else ""), published=published)
            return code
        if backend == "missing":
            from nemo_runspec import parse

            image = parse(script).image
            why = "cannot run here (no GPU stack)" if importable(native_module) else "is not installed here"
            report.error(f"{name}: {native_module} {why}; run this recipe in its container "
                         f"({image}) or install {native_module} (or use the CPU fallback: -c tiny, or "
                         "+fallback.enabled=true).")
            return EXIT_BACKEND_MISSING
        if global_rank() == 0:
            why = ("chosen by the config" if str(cfg.get("backend") or "auto") == "torch"
                   or (cfg.get("fallback") or {}).get("enabled") is True
                   else f"{native_module} " + ("cannot run here (no GPU stack)" if importable(native_module)
                                              else "is not installed"))
            print(f"[{kind}] backend: CPU fallback (tiny GPT in plain PyTorch), not {native_module}: {why}",
                  flush=True)
        code = run_fallback(kind, cfg, report)
        if code == 0:
            published = publish_checkpoint(cfg, kind, args.config, backend="torch-fallback")
            if published:
                report.summary(f"{report.message}; published {published}", published=published)
        return code
    except NemoRunspecError as exc:
        if debug:
            raise
        report.error(f"error: {exc}")
        return 1 if isinstance(exc, ExecutionError) else 2
    except (FloatingPointError, RuntimeError, OSError) as exc:
        if debug:
            raise
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        report.error(f"error: {name} training failed: {msg}")
        return 1
    except KeyboardInterrupt:
        report.error(f"{name}: interrupted; rerun to resume from the last checkpoint")
        return 130
