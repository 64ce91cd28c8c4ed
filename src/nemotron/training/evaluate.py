"""The evaluation job of the ``nano3/eval`` recipe: NeMo Evaluator, or the CPU fallback.

``recipes/nano3/eval/eval.py`` runs :func:`nemotron.training.eval_entry.main` as ``python eval.py --config
<train.yaml> [key=value ...] [--task NAME ...]``. Which backend evaluates is
:func:`nemo_runspec.evaluation.evaluator.evaluation_backend` of the config, then what is
importable here:

- **NeMo Evaluator** (``nemo_evaluator_launcher``): the config minus our keys,
  over the launcher's packaged defaults, is written to ``<job dir>/eval.yaml`` and
  handed to the launcher's ``run_eval``, which deploys the checkpoint and runs the
  benchmark containers where ``execution`` says (its own Slurm jobs, or Docker
  here). The job records the invocation; scores arrive in the launcher's output
  dir (and W&B), not in this process.
- **CPU fallback** (plain PyTorch, the tiny GPT checkpoints ``step_<N>.pt`` of
  the fallback trainer): really evaluates, here, the two tasks of
  ``evaluation.tasks`` it knows:

  * ``heldout_perplexity``: mean next-token cross-entropy (nats/token) and its
    ``exp`` over every token of a split of the pretrain data prep's
    ``blend.json`` (default ``test``): each dataset's token stream is cut into
    windows of the model's context, stride = context, so every token but the
    first of each stream is predicted exactly once, with as much context as the
    window gives it.
  * ``answer_exact_match``: for each record of a split of the RL data prep
    (default ``validation``), the model sees ``prompt + "\\n"`` (the RL fallback's
    format) and greedy-decodes up to ``max_new_tokens`` tokens; ``exact_match`` is
    the share whose decoded text equals the answer after stripping. Teacher-forced
    ``answer_loss`` and ``answer_token_accuracy`` on the answer tokens (and EOS)
    come with it, so two runs can be told apart even when neither gets an answer
    exactly right.

Either way the job writes ``results.json`` into the job dir, publishes it as
``publish.name`` (metadata: the metrics and the model it evaluated), and its last
line is ``eval: <metric>=<value> ...``. Errors are one ``error: ...`` line (exit 2
for config/data problems, 1 for failures while evaluating, 3 when no backend can
run here).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from nemo_runspec.errors import ConfigError, ExecutionError
from nemo_runspec.runtime.dotted import lookup

# the tasks' own module; their names stay importable from here
from .eval_tasks import METRICS, TASK_FUNCTIONS, answer_exact_match, heldout_perplexity  # noqa: F401

NATIVE_MODULE = "nemo_evaluator_launcher"
#: Where the checkpoint to evaluate is named, for either backend.
MODEL_KEY = "deployment.checkpoint_path"
RESULTS = "results.json"
#: The tasks the CPU fallback can run, with their defaults.
FALLBACK_TASKS: dict[str, dict[str, Any]] = {
    "heldout_perplexity": {"split": "test", "data_key": "fallback.data_path"},
    "answer_exact_match": {"split": "validation", "data_key": "fallback.task_data_path",
                           "max_new_tokens": 16, "samples": None},
}
EXIT_BACKEND_MISSING = 3
NAME = "nano3/eval"


def _say(msg: str) -> None:
    print(msg, flush=True)


# --------------------------------------------------------------------------- config


def parse_args(argv: list[str] | None) -> tuple[str, list[str], list[str]]:
    """``(config path, key=value overrides, selected tasks)`` of the script's command line."""
    from nemo_runspec.evaluation.evaluator import parse_task_flags

    parser = argparse.ArgumentParser(description="Evaluate a model (NeMo Evaluator or the CPU fallback).")
    parser.add_argument("--config", required=True, help="eval config YAML written by the CLI")
    args, extra = parser.parse_known_args(argv)
    tasks, rest = parse_task_flags(extra)
    unknown = [e for e in rest if not ("=" in e and not e.startswith("-"))]
    if unknown:
        raise ConfigError(f"unknown argument(s) {' '.join(unknown)}",
                          hint="eval.py takes --config PATH, key=value overrides and --task NAME")
    return args.config, rest, tasks


def load_config(path: str, overrides: list[str], tasks: list[str]) -> Any:
    """The recipe config (``defaults:`` chain merged, overrides applied), with ``tasks``
    extended by the ``--task`` flags."""
    from omegaconf import OmegaConf

    from nemo_runspec.config import load_config_file
    from nemo_runspec.evaluation.evaluator import wanted_tasks

    cfg = load_config_file(path, overrides)
    if tasks:
        OmegaConf.set_struct(cfg, False)
        current = wanted_tasks(OmegaConf.to_container(cfg, resolve=False))
        cfg.tasks = [*[t for t in current if t not in tasks], *tasks]
    return cfg


def choose_backend(cfg: Any) -> str:
    """``"native"``, ``"torch"`` or ``"missing"``: the config's wish
    (:func:`~nemo_runspec.evaluation.evaluator.evaluation_backend`) and what imports here."""
    from nemo_runspec.evaluation.evaluator import evaluation_backend

    from .entry import importable, native_usable

    wish = evaluation_backend(cfg)
    if wish == "fallback":
        return "torch" if importable("torch") else "missing"
    if native_usable(NATIVE_MODULE):
        return "native"
    if wish == "auto" and importable("torch"):
        return "torch"
    return "missing"


def _raw(cfg: Any) -> dict[str, Any]:
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(data, dict)
    return data


def model_ref(cfg: Any) -> str:
    """What is evaluated, for the record: ``name:vN`` of the model artifact when
    :data:`MODEL_KEY` is ``${art:KEY,path}``, else the path as given."""
    import re

    from omegaconf import OmegaConf

    from nemo_runspec.config.resolvers import register_resolvers

    raw = _raw(cfg)
    value = str(lookup(raw, MODEL_KEY) or "")
    m = re.fullmatch(r"\$\{art:\s*([^,}\s]+)\s*(?:,\s*path\s*)?\}(.*)", value)
    if not m:
        return value
    register_resolvers()
    sub = OmegaConf.create({"run": raw.get("run") or {}, "ref": f"${{art:{m.group(1)},ref}}"})
    return str(sub.ref) + m.group(2)


def fallback_plan(cfg: Any, *, resolve: bool = True) -> dict[str, Any]:
    """What the CPU fallback evaluates (written as ``eval.yaml``): the model, the
    tokenizer and the selected tasks with their data and settings. With
    ``resolve=False`` the values stay as written (``${art:...}``): the dry run."""
    from nemo_runspec.evaluation.evaluator import select_tasks, wanted_tasks

    from .entry import resolve_path_key

    raw = _raw(cfg)
    fb = dict(raw.get("fallback") or {})
    listed = list(lookup(raw, "evaluation.tasks") or [])
    tasks = select_tasks(listed, wanted_tasks(raw))
    if not tasks:
        raise ConfigError("no evaluation tasks", key="evaluation.tasks",
                          hint="list heldout_perplexity and/or answer_exact_match")

    def value(dotted: str) -> Any:
        if lookup(raw, dotted) in (None, ""):
            raise ConfigError(f"{dotted} is not set", key=dotted)
        return resolve_path_key(cfg, dotted) if resolve else lookup(raw, dotted)

    plan_tasks = []
    for task in tasks:
        spec = dict(task) if isinstance(task, dict) else {"name": str(task)}
        name = str(spec.get("name"))
        if name not in FALLBACK_TASKS:
            raise ConfigError(f"the CPU fallback has no task {name!r}", key="evaluation.tasks",
                              hint="it runs " + ", ".join(FALLBACK_TASKS) + "; benchmarks need NeMo Evaluator")
        defaults = FALLBACK_TASKS[name]
        entry = {"name": name, "data": value(defaults["data_key"])}
        entry.update({k: v for k, v in defaults.items() if k != "data_key"})
        entry.update({k: v for k, v in spec.items() if k != "name"})
        plan_tasks.append(entry)
    tokenizer = fb.get("tokenizer")
    if resolve and tokenizer and str(tokenizer).startswith("pkg:"):
        from nemotron.data_prep.paths import resolve_pkg

        tokenizer = resolve_pkg(str(tokenizer))
    return {
        "backend": "torch-fallback",
        "model": {"path": value(MODEL_KEY), "ref": model_ref(cfg) if resolve else lookup(raw, "run.model")},
        "tokenizer": tokenizer,
        "device": fb.get("device") or "auto",
        "batch_size": int(fb.get("batch_size") or 16),
        "threads": fb.get("threads"),
        "chain": fb.get("chain", True) is not False,
        "tasks": plan_tasks,
    }


# --------------------------------------------------------------------------- the CPU fallback


def is_fallback_checkpoint(path: str) -> bool:
    """True for a ``step_<N>.pt`` file of the fallback trainer or a dir holding one."""
    from .checkpoint import latest_checkpoint

    p = Path(os.path.expanduser(path))
    if p.is_file():
        return p.suffix == ".pt" and p.name.startswith("step_")
    return p.is_dir() and latest_checkpoint(p) is not None


def load_model(path: str, device: Any) -> tuple[Any, dict[str, Any]]:
    """The tiny GPT of the newest ``step_<N>.pt`` in ``path`` (or the file itself), in eval mode."""
    import torch

    from .checkpoint import latest_checkpoint, load_checkpoint
    from .tiny_gpt import GPTConfig, TinyGPT

    p = Path(path)
    if p.is_dir():
        found = latest_checkpoint(p)
        if found is None:
            raise ConfigError(f"no CPU-fallback checkpoint (step_*.pt) in {p}", key=MODEL_KEY,
                              hint="the fallback evaluates checkpoints of the tiny CPU chain; "
                                   "evaluate other models with NeMo Evaluator (the default config)")
        p = found
    elif not p.is_file():
        raise ConfigError(f"model checkpoint {p} not found", key=MODEL_KEY)
    state = load_checkpoint(p)
    shape = state.get("model_config") if isinstance(state, dict) else None
    if not isinstance(shape, dict) or "model" not in state:
        raise ConfigError(f"{p} is not a CPU-fallback checkpoint (no model_config)", key=MODEL_KEY)
    model = TinyGPT(GPTConfig(**shape))
    with torch.no_grad():
        model.load_state_dict(state["model"])
    model.to(device).eval()
    info = {"checkpoint": str(p), "step": int(state.get("step", 0)), "stage": state.get("task"),
            "model_config": shape, "init_from": state.get("init_from")}
    return model, info



def _device(name: str) -> Any:
    import torch

    if name == "cuda" or (name == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise ConfigError("fallback.device is cuda but no GPU is visible", key="fallback.device")
        return torch.device("cuda")
    return torch.device("cpu")


def run_tasks(model: Any, plan: dict[str, Any]) -> tuple[dict[str, Any], dict[str, float]]:
    """Run ``plan``'s tasks on ``model``: ``(results per task, flat metrics)``."""
    tasks: dict[str, Any] = {}
    metrics: dict[str, float] = {}
    for task in plan["tasks"]:
        name = task["name"]
        opts = {k: v for k, v in task.items() if k not in ("name", "data")}
        if name == "answer_exact_match":
            opts["tokenizer"] = plan.get("tokenizer")
        start = time.perf_counter()
        result = TASK_FUNCTIONS[name](model, task["data"], batch_size=plan["batch_size"], **opts)
        result["seconds"] = time.perf_counter() - start
        tasks[name] = result
        for flat, key in METRICS[name].items():
            metrics[flat] = result[key]
    return tasks, metrics


def run_fallback(plan: dict[str, Any]) -> dict[str, Any]:
    """Evaluate ``plan`` (:func:`fallback_plan`, resolved); returns the results record.

    With ``plan["chain"]`` (the default) the models the evaluated one was trained from
    are evaluated too (``chain`` in the record: :mod:`nemotron.training.eval_chain`)."""
    t0 = time.perf_counter()
    device = _device(str(plan["device"]))
    if plan.get("threads") and device.type == "cpu":
        import torch

        torch.set_num_threads(int(plan["threads"]))
    model, info = load_model(plan["model"]["path"], device)
    shape = info["model_config"]
    _say(f"[eval] model {plan['model']['ref']} -> {info['checkpoint']} ({info['stage']} stage, step "
         f"{info['step']}; tiny GPT {shape['n_layer']}x{shape['d_model']}, vocab {shape['vocab_size']}, "
         f"context {shape['seq_length']})")
    tasks, metrics = run_tasks(model, plan)
    for name, result in tasks.items():
        _say(f"[eval] {name}: done in {result['seconds']:.1f} s")
    record = {"backend": "torch-fallback", "model": {**plan["model"], **info}, "tasks": tasks, "metrics": metrics}
    if plan.get("chain", True):
        from .eval_chain import evaluate_chain

        record["chain"] = evaluate_chain(info, metrics, load=lambda path: load_model(path, device),
                                         run=lambda m: run_tasks(m, plan))
    record["seconds"] = time.perf_counter() - t0
    return record


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 1000 else f"{value:.1f}"
    return str(value)


def print_table(results: dict[str, Any]) -> None:
    """The results as a small aligned table, one row per task metric."""
    rows = [("task", "metric", "value")]
    for name, res in results.get("tasks", {}).items():
        for flat, key in METRICS.get(name, {}).items():
            extra = f"  ({res['correct']}/{res['samples']})" if flat == "exact_match" else ""
            rows.append((name, flat, _fmt(res[key]) + extra))
        size = f"{res['tokens']} tokens" if "tokens" in res else f"{res.get('samples')} samples"
        rows.append((name, "evaluated", f"{size} of {res['split']}"))
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    for r in rows:
        _say(f"  {r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]}")


def summary_line(results: dict[str, Any]) -> str:
    """``eval: <metric>=<value> ... model=<ref>``: the job's last line."""
    parts = [f"{k}={_fmt(v)}" for k, v in results.get("metrics", {}).items()]
    if results.get("invocation_id"):
        parts.append(f"invocation={results['invocation_id']}")
        parts.append("tasks=" + ",".join(results.get("task_names") or []))
    model = results.get("model") or {}
    parts.append(f"model={model.get('ref') or model.get('path')}")
    return "eval: " + " ".join(parts)


# --------------------------------------------------------------------------- NeMo Evaluator


def run_native(cfg: Any, job_dir: Path) -> dict[str, Any]:
    """Hand the evaluation config to ``nemo_evaluator_launcher`` (written first as
    ``eval.yaml``); returns the results record (the launcher's invocation)."""
    from omegaconf import OmegaConf

    from nemo_runspec.evaluation import evaluator

    from .entry import resolve_path_key
    from .formats import check_model_input
    from .version_check import check_evaluator

    check_evaluator()  # the launcher line this config is written for (docs/evaluation.md)
    check_model_input("eval", cfg, "native", resolve=resolve_path_key)  # vLLM serves a Hugging Face model
    config = evaluator.evaluator_config(cfg)
    defaults = cfg.get("launcher_defaults")
    config = evaluator.compose_with_launcher_defaults(config, dict(defaults) if defaults is not None else {})
    path = evaluator.save_eval_config(config, job_dir)
    _say(f"[eval] evaluation config: {path}")
    missing = evaluator.missing_values(config)
    if missing:
        raise ConfigError("the evaluation config leaves required values unset: " + ", ".join(missing),
                          key=missing[0], hint="set them in the env.toml profile (host, account, "
                                               "remote_job_dir) or as overrides (execution.hostname=...)")
    if evaluator.wandb_export(config) is not None and not os.environ.get(evaluator.WANDB_KEY_VAR):
        raise ConfigError(f"W&B export is on but ${evaluator.WANDB_KEY_VAR} is not set in the job",
                          key="export.wandb", hint=f"export {evaluator.WANDB_KEY_VAR} where you run nemotron "
                                                   "(Slurm jobs get it through the secrets file), "
                                                   "or drop the export: ~export.wandb")
    from nemo_evaluator_launcher.api.functional import run_eval

    names = [str(t.get("name")) for t in (config.get("evaluation") or {}).get("tasks") or []]
    invocation = run_eval(OmegaConf.create(config), dry_run=False)
    if not invocation:
        raise ExecutionError("nemo-evaluator-launcher returned no invocation id")
    _say(f"[eval] submitted NeMo Evaluator invocation {invocation}: {', '.join(names)}; "
         f"follow it with `nemo-evaluator-launcher status {invocation}`")
    return {"backend": "nemo-evaluator", "invocation_id": str(invocation), "task_names": names,
            "output_dir": lookup(config, "execution.output_dir"), "model": {"ref": model_ref(cfg),
            "path": lookup(config, MODEL_KEY)}, "metrics": {}, "eval_config": str(path),
            "wandb": evaluator.wandb_export(config)}


# --------------------------------------------------------------------------- entry point


def publish_results(cfg: Any, results_path: Path, results: dict[str, Any], config_path: str) -> None:
    """Publish ``results.json`` as the artifact ``publish.name`` (metadata: the metrics and the model)."""
    name = (cfg.get("publish") or {}).get("name")
    if not name:
        return
    from nemo_runspec.artifacts.registry import get_registry

    registry = get_registry()
    model = results.get("model") or {}
    meta = {"kind": "eval", "backend": results["backend"], "metrics": results.get("metrics") or {},
            "model": model.get("ref") or model.get("path"), "model_path": model.get("path"),
            "model_step": model.get("step"), "tasks": list(results.get("tasks") or results.get("task_names") or []),
            "config": str(config_path)}
    if results.get("invocation_id"):
        meta["invocation_id"] = results["invocation_id"]
    if results.get("chain"):
        meta["chain"] = [{k: row.get(k) for k in ("model", "step", "metrics")} for row in results["chain"]]
    art = registry.publish(str(name), results_path, metadata=meta)
    _say(f"published {art.ref} (latest) -> {art.path}  [registry: {registry.location}]")


# --------------------------------------------------------------------------- dry run


def show_plan(ev: Any, *, console: Any = None) -> int:
    """The evaluation part of a dry run of ``nano3/eval``: the config of the backend
    the job will use (NeMo Evaluator's ``eval.yaml`` with its images, or the CPU
    fallback's plan), offline. Returns 0."""
    from rich.console import Console
    from rich.text import Text

    from nemo_runspec.evaluation import evaluator

    out = console or Console(highlight=False)
    script = ev.job.script_config()
    wish = evaluator.evaluation_backend(script)
    if wish == "nemo-evaluator":
        return evaluator.show_evaluation(ev, console=out)
    plan = fallback_plan(script, resolve=False)
    if wish == "auto":
        out.print(Text("note: backend auto: NeMo Evaluator when nemo-evaluator-launcher imports in the job, "
                       "else this CPU-fallback plan", style="dim"), soft_wrap=True)
    out.print("[bold]Evaluation config[/bold] (eval.yaml: what the CPU fallback evaluates)")
    out.print(evaluator.to_yaml(plan), markup=False, highlight=False, soft_wrap=True, end="")
    out.print(Text("note: ${art:...} references are resolved when the job starts (see Artifacts above); "
                   "no container is started", style="dim"), soft_wrap=True)
    return 0


def prepare_eval(job: Any) -> Any:
    """The evaluation job of ``job`` made ready, the same for ``nano3 eval`` and the chain's
    eval stage: task selection, env.toml ``[wandb]`` into the evaluator config (and the W&B
    key through the secrets path); its dry run followed by :func:`show_plan`; the evaluator
    images' ``.sqsh`` imports submitted before it (a :class:`nemo_runspec.pipeline.step.Preparation`)."""
    from nemo_runspec.evaluation import evaluator
    from nemo_runspec.pipeline.step import Preparation

    ev = evaluator.prepare_eval_job(job)
    return Preparation(ev.job, show=lambda console: show_plan(ev, console=console),
                       before_submit=lambda: evaluator.submit_image_squashes(ev))
