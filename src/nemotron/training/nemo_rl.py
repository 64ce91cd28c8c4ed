"""Our RL config onto NeMo-RL's GRPO entry, the way its own ``run_grpo_math.py`` does it.

Written against NeMo-RL v0.4.0 (:data:`PINNED`; the ``nvcr.io/nvidia/nemo-rl:v0.4.0``
image the recipe's runspec names). NeMo-RL has no usable PyPI release, so the
calls here are checked against a manifest read from that tag's source
(``scripts/nemo_rl_api.py``, ``tests/nemotron/training/test_nemo_rl.py``).

The flow, step for step as in NeMo-RL's example entry:

1. the base GRPO config (``base_config``, default :data:`BASE_CONFIG` inside the
   image) loaded with NeMo-RL's ``load_config``, our keys merged on top, resolved
   to the ``MasterConfig`` dict;
2. ``data``: our RL data-prep directory becomes ``ResponseDataset`` paths
   (``train.jsonl``/``validation.jsonl``, ``prompt``/``answer`` as input/output keys);
3. ``init_ray``, ``get_tokenizer``, ``configure_generation_config``;
4. the datasets (``AllTaskProcessedDataset`` with ``math_hf_data_processor``, the
   task named by each record's ``task_name``) and a ``MathEnvironment`` actor;
5. ``setup(config, tokenizer, dataset, val_dataset)`` -> ten values, then
   ``grpo_train`` with twelve (``async_grpo_train`` when ``grpo.async_grpo.enabled``).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nemo_runspec.errors import ConfigError

from .megatron_bridge import import_target
from .native_resilience import NativeResilience, grpo_finished

PINNED = "nemo-rl v0.4.0"
PINNED_COMMIT = "c751f811217db7df0d4c94abdeaada6626cfc150"
#: NeMo-RL's own GRPO config inside the v0.4.0 image (its WORKDIR is /opt/nemo-rl)
BASE_CONFIG = "/opt/nemo-rl/examples/configs/grpo_math_1B.yaml"
MATH_ENV = "nemo_rl.environments.math_environment.MathEnvironment"

#: every NeMo-RL object this module uses, by the short name the code calls it by
NAMES: dict[str, str] = {
    "load_config": "nemo_rl.utils.config.load_config",
    "get_next_experiment_dir": "nemo_rl.utils.logger.get_next_experiment_dir",
    "init_ray": "nemo_rl.distributed.virtual_cluster.init_ray",
    "get_tokenizer": "nemo_rl.algorithms.utils.get_tokenizer",
    "configure_generation_config": "nemo_rl.models.generation.configure_generation_config",
    "load_response_dataset": "nemo_rl.data.datasets.load_response_dataset",
    "AllTaskProcessedDataset": "nemo_rl.data.datasets.AllTaskProcessedDataset",
    "TaskDataSpec": "nemo_rl.data.interfaces.TaskDataSpec",
    "math_hf_data_processor": "nemo_rl.data.processors.math_hf_data_processor",
    "MathEnvironment": MATH_ENV,
    "get_actor_python_env": "nemo_rl.distributed.ray_actor_environment_registry.get_actor_python_env",
    "setup": "nemo_rl.algorithms.grpo.setup",
    "grpo_train": "nemo_rl.algorithms.grpo.grpo_train",
    "async_grpo_train": "nemo_rl.algorithms.grpo.async_grpo_train",
    # not called here: load_response_dataset builds it from our data keys
    "ResponseDataset": "nemo_rl.data.datasets.response_datasets.ResponseDataset",
}
#: our config keys that are ours, not MasterConfig's
OWN_KEYS = ("base_config",)


def data_section(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` for NeMo-RL's ``load_response_dataset``: a data-prep directory in
    ``train_data_path`` becomes its ``train.jsonl`` / ``validation.jsonl``."""
    out = dict(data)
    train = str(out.get("train_data_path") or "")
    if not train:
        raise ConfigError("data.train_data_path is not set", key="data.train_data_path",
                          hint="point it at the RL data-prep output (${art:data,path})")
    if not train.endswith((".json", ".jsonl")):
        root = Path(train)
        out["train_data_path"] = str(root / "train.jsonl")
        if not out.get("val_data_path") and (root / "validation.jsonl").is_file():
            out["val_data_path"] = str(root / "validation.jsonl")
    out.setdefault("dataset_name", "ResponseDataset")
    out.setdefault("input_key", "prompt")
    out.setdefault("output_key", "answer")
    return out


def check_records(path: str, *, output_key: str = "answer") -> int:
    """Fail before Ray starts when a record cannot be rewarded: no reference answer or
    no ``task_name``. Returns the number of records."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"RL training data not found: {p}", key="data.train_data_path",
                          hint="run `nemotron nano3 data prep rl` first or fix data.train_data_path")
    n = 0
    with open(p, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            rec = json.loads(line)
            for key in (output_key, "task_name"):
                if rec.get(key) in (None, ""):
                    raise ConfigError(f"{p}:{n}: record has no {key!r}; GRPO's environment needs it",
                                      key="data.train_data_path",
                                      hint="rerun `nemotron nano3 data prep rl` (require_answer: true)")
    return n


def master_config(cfg: Mapping[str, Any], load_config: Callable[[str], Any]) -> dict[str, Any]:
    """NeMo-RL's base GRPO config with our keys merged on top, resolved to a plain dict."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("mul"):  # NeMo-RL's configs use it; its entry registers it too
        OmegaConf.register_new_resolver("mul", lambda a, b: a * b)
    ours = {k: v for k, v in cfg.items() if k not in OWN_KEYS}
    base = load_config(str(cfg.get("base_config") or BASE_CONFIG))
    config = OmegaConf.to_container(OmegaConf.merge(base, ours), resolve=True)
    config["data"] = data_section(config.get("data") or {})
    config["checkpointing"] = {**(config.get("checkpointing") or {}), **resilience_checkpointing(os.environ)}
    return config


def resilience_checkpointing(environ: Mapping[str, str]) -> dict[str, Any]:
    """NeMo-RL's own ``checkpointing`` keys for a job with ``[resilience]``: checkpoints on, and
    ``checkpoint_must_save_by`` (``DD:HH:MM:SS``, its ``TimeoutChecker``) at time limit - signal_before."""
    if not environ.get("NEMOTRON_RESILIENCE_DIR"):
        return {}
    out: dict[str, Any] = {"enabled": True}
    after = environ.get("NEMOTRON_RESILIENCE_EXIT_AFTER", "")
    if after.isdigit():
        secs = int(after)
        out["checkpoint_must_save_by"] = (f"{secs // 86400:02d}:{secs % 86400 // 3600:02d}:"
                                          f"{secs % 3600 // 60:02d}:{secs % 60:02d}")
    return out


def actor_env_vars(environ: Mapping[str, str]) -> dict[str, str]:
    """What the environment actor inherits: the job's variables minus credential-shaped
    ones (Ray keeps a runtime_env in its job table and dashboard)."""
    from nemo_runspec.secrets import is_secret_name, looks_like_credential

    return {k: v for k, v in environ.items() if not (is_secret_name(k) or looks_like_credential(v))}


def build_datasets(config: Mapping[str, Any], tokenizer: Any, name: Callable[[str], Any]) -> tuple[Any, ...]:
    """(dataset, val_dataset, task_to_env, val_task_to_env), as NeMo-RL's math example builds them."""
    data = config["data"]
    spec = name("TaskDataSpec")(task_name="math", prompt_file=data.get("prompt_file"),
                                system_prompt_file=data.get("system_prompt_file"))
    processor = name("math_hf_data_processor")
    processors: dict[str, Any] = defaultdict(lambda: (spec, processor))
    processors["math"] = (spec, processor)
    loaded = name("load_response_dataset")(data, config["grpo"]["seed"])
    env = name("MathEnvironment").options(runtime_env={
        "py_executable": name("get_actor_python_env")(MATH_ENV),
        "env_vars": actor_env_vars(os.environ),
    }).remote(config["env"]["math"])

    def processed(split: str) -> Any:
        ds = loaded.formatted_ds.get(split)
        return None if not ds else name("AllTaskProcessedDataset")(
            ds, tokenizer, spec, processors, max_seq_length=data["max_input_seq_length"])

    task_to_env: dict[str, Any] = defaultdict(lambda: env)
    task_to_env["math"] = env
    return processed("train"), processed("validation"), task_to_env, task_to_env


def run(cfg: Mapping[str, Any], extra: list[str] | None = None, *,
        importer: Callable[[str], Any] = import_target) -> int:
    """GRPO with NeMo-RL on the resolved config ``cfg`` (``extra`` overrides are already in it).

    ``importer`` resolves the dotted names in :data:`NAMES`; tests pass one that
    returns stand-ins shaped like NeMo-RL's (from the pinned source's manifest).
    """
    def name(short: str) -> Any:
        return importer(NAMES[short])

    config = master_config(cfg, name("load_config"))
    data = config["data"]
    check_records(data["train_data_path"], output_key=data["output_key"])
    config["logger"]["log_dir"] = name("get_next_experiment_dir")(config["logger"]["log_dir"])
    print(f"[rl] backend: NeMo-RL GRPO ({PINNED}); logs in {config['logger']['log_dir']}", flush=True)

    name("init_ray")()
    tokenizer = name("get_tokenizer")(config["policy"]["tokenizer"])
    config["policy"]["generation"] = name("configure_generation_config")(config["policy"]["generation"], tokenizer)
    dataset, val_dataset, task_to_env, val_task_to_env = build_datasets(config, tokenizer, name)
    (policy, policy_generation, _clusters, dataloader, val_dataloader, loss_fn, logger, checkpointer,
     grpo_state, master) = name("setup")(config, tokenizer, dataset, val_dataset)
    args = (policy, policy_generation, dataloader, val_dataloader, tokenizer, loss_fn,
            task_to_env, val_task_to_env, logger, checkpointer, grpo_state, master)
    async_cfg = config["grpo"].get("async_grpo") or {}
    res = NativeResilience.from_env()
    if res.enabled:
        res.watch_logger(logger)
    if async_cfg.get("enabled"):
        name("async_grpo_train")(*args, max_trajectory_age_steps=async_cfg["max_trajectory_age_steps"])
    else:
        name("grpo_train")(*args)
    if not res.enabled:
        return 0
    # grpo_train returns both at its end and after its checkpoint_must_save_by save: its save state says which
    try:
        batches: int | None = len(dataloader)
    except TypeError:
        batches = None
    asynchronous = bool(async_cfg.get("enabled"))
    step_key = "current_step" if asynchronous else "total_steps"
    if grpo_finished(grpo_state, config["grpo"], batches, asynchronous=asynchronous):
        return res.finished()
    return res.stopped_early(int(grpo_state.get(step_key) or 0))
