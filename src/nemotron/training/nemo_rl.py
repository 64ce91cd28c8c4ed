"""Our RL config onto NeMo-RL's GRPO entry, the way its own example entry does it.

Which example, and which names and arities, depend on the NeMo-RL release inside the
job's image: an :class:`~nemotron.training.rl_lines.RLLine` says it per release line
and :func:`run` takes the installed version's. NeMo-RL has no usable PyPI release, so
the calls here are checked against manifests read from each release's source
(``scripts/nemo_rl_api.py``, ``tests/nemotron/training/test_nemo_rl.py``).

The flow, step for step as in NeMo-RL's example entry of the line:

1. the base GRPO config (``base_config``, default :data:`BASE_CONFIG` inside the
   image) loaded with NeMo-RL's ``load_config``, our keys merged on top, resolved
   to the ``MasterConfig`` dict;
2. ``data``: our RL data-prep directory becomes ``ResponseDataset`` paths
   (``train.jsonl``/``validation.jsonl``, ``prompt``/``answer`` as input/output keys):
   the flat keys of 0.4-0.5, or the ``data.train``/``data.validation`` entries of 0.6+;
3. ``init_ray``, ``get_tokenizer``, ``configure_generation_config``;
4. 0.4-0.5: the datasets (``AllTaskProcessedDataset`` with ``math_hf_data_processor``,
   the task named by each record's ``task_name``) and a ``MathEnvironment`` actor;
   0.6+: NeMo-RL's ``setup_response_data`` builds both;
5. ``setup(config, tokenizer, dataset, val_dataset)`` -> ten (thirteen on 0.7) values,
   then ``grpo_train`` with twelve (``async_grpo_train`` when ``grpo.async_grpo.enabled``).
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
from .rl_lines import LINES, MATH_ENV, SETUP_VALUES, RLLine, line_for

#: NeMo-RL's own GRPO config inside its images (their WORKDIR is /opt/nemo-rl)
BASE_CONFIG = "/opt/nemo-rl/examples/configs/grpo_math_1B.yaml"
#: the names of the oldest supported line (the math example's), for callers that name one line
NAMES: dict[str, str] = LINES[0].names
#: our config keys that are ours, not MasterConfig's
OWN_KEYS = ("base_config",)
#: our flat data keys; on 0.6+ they become the data.train / data.validation entries
FLAT_DATA_KEYS = ("train_data_path", "val_data_path", "dataset_name", "input_key", "output_key")


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


def per_split_data(flat: Mapping[str, Any]) -> dict[str, Any]:
    """The 0.6+ ``data`` section from our flat one (already through :func:`data_section`): one
    ``ResponseDataset`` entry each for ``train`` and ``validation`` (replacing the base
    config's, whose ``split_validation_size`` would split ours again); the rest kept."""
    out = {k: v for k, v in flat.items() if k not in FLAT_DATA_KEYS}

    def entry(path: str) -> dict[str, Any]:
        return {"dataset_name": flat["dataset_name"], "data_path": path,
                "input_key": flat["input_key"], "output_key": flat["output_key"]}
    out["train"] = entry(flat["train_data_path"])
    out["validation"] = entry(flat["val_data_path"]) if flat.get("val_data_path") else None
    return out


def master_config(cfg: Mapping[str, Any], load_config: Callable[[str], Any], *,
                  line: RLLine = LINES[0]) -> dict[str, Any]:
    """NeMo-RL's base GRPO config with our keys merged on top, resolved to a plain dict
    in the ``data`` layout of ``line``."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("mul"):  # NeMo-RL's configs use it; its entry registers it too
        OmegaConf.register_new_resolver("mul", lambda a, b: a * b)
    ours = {k: v for k, v in cfg.items() if k not in OWN_KEYS}
    base = load_config(str(cfg.get("base_config") or BASE_CONFIG))
    if line.per_split_data:  # ours replace the base's dataset entries, not merge into them
        base = OmegaConf.merge(base, {"data": {"train": None, "validation": None}})
    config = OmegaConf.to_container(OmegaConf.merge(base, ours), resolve=True)
    config["data"] = data_section(config.get("data") or {})
    if line.per_split_data:
        config["data"] = per_split_data(config["data"])
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


def installed_line() -> RLLine:
    """The line of the installed nemo-rl (:mod:`nemotron.training.version_check` has already
    refused an unsupported one when the job started)."""
    from .release import installed_line as line_of_installed

    return line_of_installed("nemo-rl", line_for)


def generation_flags(config: Mapping[str, Any], line: RLLine) -> dict[str, Any]:
    """``configure_generation_config``'s extra arguments on ``line``, read as NeMo-RL's example does."""
    policy = config["policy"]
    values = {"has_refit_draft_weights": bool((policy.get("draft") or {}).get("enabled")),
              "trains_mtp": bool((policy.get("megatron_cfg") or {}).get("mtp_num_layers"))}
    return {flag: values[flag] for flag in line.generation_flags}


def run(cfg: Mapping[str, Any], extra: list[str] | None = None, *,
        importer: Callable[[str], Any] = import_target, line: RLLine | None = None) -> int:
    """GRPO with NeMo-RL on the resolved config ``cfg`` (``extra`` overrides are already in it).

    ``line``: the release line to follow (default: the installed version's).
    ``importer`` resolves the dotted names of the line; tests pass one that returns
    stand-ins shaped like NeMo-RL's (from each release's manifest).
    """
    line = line or installed_line()

    def name(short: str) -> Any:
        return importer(line.names[short])

    config = master_config(cfg, name("load_config"), line=line)
    data = config["data"]
    train_file, output_key = (data["train"]["data_path"], data["train"]["output_key"]) if line.per_split_data \
        else (data["train_data_path"], data["output_key"])
    check_records(train_file, output_key=output_key)
    config["logger"]["log_dir"] = name("get_next_experiment_dir")(config["logger"]["log_dir"])
    print(f"[rl] backend: NeMo-RL GRPO {line.name}, as its {line.example}; logs in {config['logger']['log_dir']}",
          flush=True)

    name("init_ray")()
    tokenizer = name("get_tokenizer")(config["policy"]["tokenizer"])
    config["policy"]["generation"] = name("configure_generation_config")(
        config["policy"]["generation"], tokenizer, **generation_flags(config, line))
    target: Any = name("MasterConfig")(**config) if line.master_config_model else config
    if line.per_split_data:
        sections = (target.data, target.env) if line.master_config_model else (config["data"], config["env"])
        dataset, val_dataset, task_to_env, val_task_to_env = name("setup_response_data")(tokenizer, *sections)
    else:
        dataset, val_dataset, task_to_env, val_task_to_env = build_datasets(config, tokenizer, name)
    values = dict(zip(SETUP_VALUES[line.setup_values], name("setup")(target, tokenizer, dataset, val_dataset),
                      strict=True))
    args = (values["policy"], values["policy_generation"], values["dataloader"], values["val_dataloader"], tokenizer,
            values["loss_fn"], task_to_env, val_task_to_env, values["logger"], values["checkpointer"],
            values["grpo_state"], values["master_config"])
    async_cfg = config["grpo"].get("async_grpo") or {}
    res = NativeResilience.from_env()
    if res.enabled:
        res.watch_logger(values["logger"])
    if async_cfg.get("enabled"):
        name("async_grpo_train")(*args, max_trajectory_age_steps=async_cfg["max_trajectory_age_steps"],
                                 **{k: values[k] for k in line.async_extra})
    else:
        name("grpo_train")(*args)
    if not res.enabled:
        return 0
    # grpo_train returns both at its end and after its checkpoint_must_save_by save: its save state says which
    grpo_state, dataloader = values["grpo_state"], values["dataloader"]
    try:
        batches: int | None = len(dataloader)
    except TypeError:
        batches = None
    asynchronous = bool(async_cfg.get("enabled"))
    step_key = "current_step" if asynchronous else "total_steps"
    if grpo_finished(grpo_state, config["grpo"], batches, asynchronous=asynchronous):
        return res.finished()
    return res.stopped_early(int(grpo_state.get(step_key) or 0))
