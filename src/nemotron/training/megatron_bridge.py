"""Our pretrain/SFT configs onto Megatron-Bridge, the way that library's users do it.

A recipe function returns a ``ConfigContainer``; our keys are then set on its
dataclass tree through :data:`FIELDS`, the one table of which key goes where, and
the data-prep output's ``blend.json`` becomes the dataset's
``blend``/``blend_per_split``/``split`` through the library's own
``get_blend_fields_from_data_paths(per_split_data_args_path=...)``. Pretraining
calls ``pretrain(config, forward_step)``, SFT ``finetune(config, forward_step)``.

Which recipe function, which model and dataset classes and where the validation
keys go depend on the Megatron-Bridge release inside the job's image: a
:class:`~nemotron.training.bridge_lines.BridgeLine` says it per release line, and
:func:`run` takes the line of the installed version. The config's
``recipe._target_`` left ``null`` means the line's own Nemotron 3 Nano recipe.

For SFT the recipe's dataset (one that downloads SQuAD) is replaced by the line's
plain SFT dataset config whose ``PackedSequenceSpecs`` name the SFT data prep's
``packed/*.npy`` files (:data:`SFT_FIELDS`; the training config takes them from the
data artifact's metadata, ``${art:data,metadata.packed_sequence_specs.*}``); its other
settings (``dataset_kwargs``, seed, dataloader type, ``pad_seq_to_mult``, ...) are
carried over from the recipe.

``ConfigContainer.from_dict`` is not used: it wants a ``_target_`` and only
the library's field names, not our layout.

Megatron-Bridge imports transformer-engine, so none of this runs without a GPU:
``tests/nemotron/training/test_bridge_lines.py`` drives it with stand-ins built from
every supported release's source, and ``test_megatron_bridge.py`` checks the
:data:`PINNED` wheel (docs/training.md says what was verified).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Callable, Mapping
from typing import Any

from nemo_runspec.errors import ConfigError

from .bridge_lines import (
    BLEND_FIELDS,
    CALLBACK_MANAGER,
    ENTRY_POINTS,
    FORWARD_STEP,
    KNOWN_RECIPES,
    SECTION_CLASSES,
    BridgeLine,
    line_for,
)
from .nsys import native_profiling

#: the wheel the test venv installs (``scripts/bootstrap.sh test``) and reads as source
PINNED = "megatron-bridge==0.3.1"
#: the line of :data:`PINNED`, used where no installed version says otherwise
PINNED_LINE: BridgeLine = line_for(PINNED.rpartition("=")[2])  # type: ignore[assignment]
RECIPES = dict(PINNED_LINE.recipes)
FINETUNING_DATASET = PINNED_LINE.sft_dataset
PACKED_SPECS = PINNED_LINE.specs_class
#: what run.profile.nsys turns on (NsysPlugin's switch: use_nsys_profiler, profile_step_*, profile_ranks)
PROFILING_CONFIG = SECTION_CLASSES["profiling"]
__all__ = ["BLEND_FIELDS", "CALLBACK_MANAGER", "ENTRY_POINTS", "FORWARD_STEP", "PINNED", "RECIPES",
           "build_config", "run", "unused_keys"]

#: our config key -> the ConfigContainer attribute it sets (both dotted)
FIELDS: dict[str, str] = {
    "model.tensor_model_parallel_size": "model.tensor_model_parallel_size",
    "model.pipeline_model_parallel_size": "model.pipeline_model_parallel_size",
    "model.expert_model_parallel_size": "model.expert_model_parallel_size",
    "model.sequence_parallel": "model.sequence_parallel",
    "model.seq_length": "model.seq_length",
    "train.train_iters": "train.train_iters",
    "train.global_batch_size": "train.global_batch_size",
    "train.micro_batch_size": "train.micro_batch_size",
    "train.eval_interval": "train.eval_interval",
    "train.eval_iters": "train.eval_iters",
    "optimizer.optimizer": "optimizer.optimizer",
    "optimizer.lr": "optimizer.lr",
    "optimizer.min_lr": "optimizer.min_lr",
    "optimizer.weight_decay": "optimizer.weight_decay",
    "optimizer.adam_beta1": "optimizer.adam_beta1",
    "optimizer.adam_beta2": "optimizer.adam_beta2",
    "optimizer.clip_grad": "optimizer.clip_grad",
    "optimizer.bf16": "optimizer.bf16",
    "scheduler.lr_decay_style": "scheduler.lr_decay_style",
    "scheduler.lr_warmup_iters": "scheduler.lr_warmup_iters",
    "data.seq_length": "dataset.sequence_length",
    "data.num_workers": "dataset.num_workers",
    "checkpoint.save": "checkpoint.save",
    "checkpoint.save_interval": "checkpoint.save_interval",
    "checkpoint.load": "checkpoint.load",
    "checkpoint.pretrained_checkpoint": "checkpoint.pretrained_checkpoint",
    "logger.log_interval": "logger.log_interval",
    "logger.wandb_project": "logger.wandb_project",
    "logger.wandb_exp_name": "logger.wandb_exp_name",
    "logger.wandb_entity": "logger.wandb_entity",
    "logger.wandb_save_dir": "logger.wandb_save_dir",
}
#: SFT reads the data prep's packed sequences (FinetuningDatasetConfig + PackedSequenceSpecs), not a blend
SFT_FIELDS: dict[str, str] = {
    "data.data_path": "dataset.dataset_root",
    "data.seq_length": "dataset.seq_length",
    **{f"data.packed_sequence_specs.{name}": f"dataset.packed_sequence_specs.{name}"
       for name in ("packed_sequence_size", "packed_train_data_path", "packed_val_data_path", "packed_metadata_path")},
}


#: top-level sections the launcher and the CPU fallback own (never Megatron-Bridge's)
OWN_SECTIONS = ("run", "fallback", "publish", "backend")
#: descriptive keys of our own configs: read by people, set on nothing
DESCRIPTIVE_KEYS = ("model.provider", "data.split")
#: where the stage's data comes from, besides FIELDS
DATA_FIELDS = ("data.data_path", "recipe._target_")


def _leaves(node: Any, prefix: str = "") -> list[str]:
    if isinstance(node, Mapping) and node:
        return [leaf for k, v in node.items() for leaf in _leaves(v, f"{prefix}.{k}" if prefix else str(k))]
    return [prefix] if prefix else []


def unused_keys(kind: str, cfg: Mapping[str, Any], *, recipe_line: BridgeLine | None = None) -> list[tuple[str, str]]:
    """``(dotted key, why)`` for every key of ``cfg`` that this stage does not read.

    Read are :data:`FIELDS` (and :data:`SFT_FIELDS` for SFT), the data and recipe
    keys, the reference's ``recipe.per_split_data_args_path`` (pretraining: the
    data-prep output's ``blend.json``, used when ``data.data_path`` is not set) and
    the sections of :data:`OWN_SECTIONS`. A config written for the reference
    merges every key onto the ``ConfigContainer``; here only :data:`FIELDS` are set, so
    other keys are named. Its ``recipe.*`` keys are the recipe function's arguments,
    passed where the installed release's recipe takes them (``recipe_line``: the line
    that will run, :func:`ignored_recipe_keys`); without a line (the CPU fallback) no
    recipe function is called and every one is named.
    """
    read = {*FIELDS, *DATA_FIELDS, *DESCRIPTIVE_KEYS, *(SFT_FIELDS if kind == "sft" else ())}
    has_data_path = _get(cfg, "data.data_path")[1] not in (None, "")
    out: list[tuple[str, str]] = []
    for key in _leaves(cfg):
        if key.split(".", 1)[0] in OWN_SECTIONS or key in read:
            continue
        if key == "recipe.per_split_data_args_path" and kind == "pretrain":
            if has_data_path:
                out.append((key, "data.data_path is set and names the data"))
            continue
        if key.startswith("recipe."):
            if recipe_line is None:
                out.append((key, "no Megatron-Bridge recipe function is called here (the reference passes "
                                 "recipe.* to it as arguments)"))
            elif key in ignored_recipe_keys(kind, cfg, recipe_line):
                out.append((key, f"the recipe function of megatron-bridge {recipe_line.name} takes no such argument"))
            continue

        out.append((key, "it is not one of the keys set on Megatron-Bridge's ConfigContainer, "
                         "listed in nemotron.training.megatron_bridge.FIELDS"))
    return out


def import_target(dotted: str) -> Any:
    """The object ``package.module.name`` names."""
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _get(cfg: Mapping[str, Any], dotted: str) -> tuple[bool, Any]:
    node: Any = cfg
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _set(obj: Any, dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        obj = getattr(obj, part)
    if not hasattr(obj, last):
        raise AttributeError(f"{type(obj).__name__} has no field {last!r} (setting {dotted})")
    setattr(obj, last, value)


#: ``TrainingConfig`` fields a resilient Slurm job sets (docs/resilience.md, "Native backends")
RESILIENCE_FIELDS = ("train.exit_signal_handler", "train.exit_signal", "train.exit_duration_in_mins")


def resilience_fields(environ: Mapping[str, str]) -> dict[str, Any]:
    """Megatron-Bridge's own exit options for a job with ``[resilience]`` (``$NEMOTRON_RESILIENCE_DIR``
    set): catch SIGTERM (preemption) to save and stop, and save and stop on its own
    ``$NEMOTRON_RESILIENCE_EXIT_AFTER`` seconds into the attempt (time limit - signal_before)."""
    if not environ.get("NEMOTRON_RESILIENCE_DIR"):
        return {}
    import signal

    out: dict[str, Any] = {"train.exit_signal_handler": True, "train.exit_signal": signal.SIGTERM}
    after = environ.get("NEMOTRON_RESILIENCE_EXIT_AFTER", "")
    if after.isdigit() and int(after) >= 60:
        out["train.exit_duration_in_mins"] = int(after) // 60
    return out


def recipe_for(kind: str, cfg: Mapping[str, Any], line: BridgeLine) -> tuple[str, dict[str, Any]]:
    """The recipe function to call and its keyword arguments.

    ``recipe._target_`` unset (or null) is the line's own Nemotron 3 Nano recipe with
    the line's arguments. A target naming another line's nano3 recipe is a one-line
    error (the installed release does not have it). On a line whose recipes take
    keyword arguments, the reference's other ``recipe.*`` keys (``peft``,
    ``packed_sequence``, ...) are passed too, as the reference does.
    """
    recipe = dict(cfg.get("recipe") or {})
    target = recipe.pop("_target_", None) or line.recipes[kind]
    recipe.pop("per_split_data_args_path", None)
    if target in KNOWN_RECIPES and target != line.recipes[kind]:
        raise ConfigError(f"recipe._target_ names {target.rpartition('.')[2]}, which megatron-bridge "
                          f"{line.name} does not have (its {kind} recipe is {line.recipes[kind].rpartition('.')[2]})",
                          key="recipe._target_", hint="set recipe._target_=null for the image's own recipe, "
                          "or run in an image whose megatron-bridge has that function")
    own = target == line.recipes[kind]
    kwargs: dict[str, Any] = dict(line.recipe_kwargs.get(kind, {})) if own else {}
    if own and line.kwargs_recipes:
        kwargs.update(recipe)
    return target, kwargs


def ignored_recipe_keys(kind: str, cfg: Mapping[str, Any], line: BridgeLine) -> list[str]:
    """The config's ``recipe.*`` arguments the recipe function of ``line`` does not get (its
    recipes take none, or the config names a function of its own, called without any)."""
    recipe = {k: v for k, v in (cfg.get("recipe") or {}).items() if k not in ("_target_", "per_split_data_args_path")}
    target, kwargs = recipe_for(kind, cfg, line)
    return [f"recipe.{k}" for k in recipe if k not in kwargs]


def build_config(kind: str, cfg: Mapping[str, Any], *, importer: Callable[[str], Any] = import_target,
                 line: BridgeLine = PINNED_LINE) -> Any:
    """The ``ConfigContainer`` for our resolved config ``cfg`` (``kind``: pretrain or sft).

    ``importer`` resolves dotted names (the recipe function, the blend helper);
    tests pass one that returns stand-ins shaped like the library's objects.
    ``line``: the Megatron-Bridge release line to build for (:func:`run` passes the
    installed one).
    """
    target, kwargs = recipe_for(kind, cfg, line)
    container = importer(target)(**kwargs)
    fields = {**FIELDS, **(SFT_FIELDS if kind == "sft" else {})}
    values: dict[str, Any] = {}
    for ours, theirs in fields.items():
        present, value = _get(cfg, ours)
        if present and value is not None:
            values[line.target(theirs)] = value
    if kind == "sft":
        dataset = {k.removeprefix("dataset."): v for k, v in values.items() if k.startswith("dataset.")}
        container.dataset = finetuning_dataset(container.dataset, dataset, importer=importer, line=line)
        values = {k: v for k, v in values.items() if not k.startswith("dataset.")}
    values.update(resilience_fields(os.environ))
    for theirs, value in values.items():
        _set(container, theirs, value)
    profiling = native_profiling(os.environ)  # run.profile.nsys (nemotron.training.nsys)
    if profiling is not None:
        _set(container, "profiling", importer(PROFILING_CONFIG)(**profiling))
    if kind == "sft":
        _check_pack_fits(container, line)
    present, data_path = _get(cfg, "data.data_path")
    blend_json = f"{str(data_path).rstrip('/')}/blend.json" if present and data_path else \
        _get(cfg, "recipe.per_split_data_args_path")[1]  # the reference's layout
    if kind == "pretrain" and blend_json:
        blend, blend_per_split, split = importer(BLEND_FIELDS)(per_split_data_args_path=str(blend_json))
        for name, value in (("blend", blend), ("blend_per_split", blend_per_split), ("split", split)):
            _set(container, f"dataset.{name}", value)
    return container


def finetuning_dataset(recipe_dataset: Any, values: Mapping[str, Any], *,
                       importer: Callable[[str], Any] = import_target, line: BridgeLine = PINNED_LINE) -> Any:
    """The line's SFT dataset config reading the packed files, with the recipe dataset's other settings.

    ``values`` are ours by field name (``seq_length``, ``packed_sequence_specs.packed_train_data_path``,
    ...); ``packed_sequence_specs.*`` go to the line's specs field (``offline_packing_specs``
    on 0.6). Fields of the recipe's dataset (and of its ``PackedSequenceSpecs``) that the
    new classes have are carried over; ours win. ``PackedSequenceSpecs`` is constructed,
    not mutated, so its own checks run (paths become ``Path``, must end in ``.npy`` and exist).
    """
    ds_cls, specs_cls = importer(line.sft_dataset), importer(line.specs_class)
    ds_names = {f.name for f in dataclasses.fields(ds_cls)}
    spec_names = {f.name for f in dataclasses.fields(specs_cls)}
    own = {"dataset_root", line.specs_field, *line.sft_dataset_extra}
    kwargs = {n: getattr(recipe_dataset, n) for n in sorted(ds_names - own) if hasattr(recipe_dataset, n)}
    kwargs.update(line.sft_dataset_extra)
    old_specs = getattr(recipe_dataset, line.specs_field, None) or getattr(recipe_dataset, "packed_sequence_specs", None)
    spec_kwargs = {n: getattr(old_specs, n) for n in sorted(spec_names) if hasattr(old_specs, n)}
    for name, value in values.items():
        section, dot, field = name.partition(".")
        if dot and section == "packed_sequence_specs":
            if field not in spec_names:
                raise AttributeError(f"{specs_cls.__name__} has no field {field!r} (setting dataset.{name})")
            spec_kwargs[field] = value
        else:
            if name not in ds_names:
                raise AttributeError(f"{ds_cls.__name__} has no field {name!r} (setting dataset.{name})")
            kwargs[name] = value
    return ds_cls(**kwargs, **{line.specs_field: specs_cls(**spec_kwargs)})


def _check_pack_fits(container: Any, line: BridgeLine) -> None:
    specs = getattr(container.dataset, line.specs_field, None)
    size = getattr(specs, "packed_sequence_size", -1) or -1
    seq = getattr(container.model, "seq_length", None)
    if seq is not None and size > seq:
        raise ConfigError(f"packed sequences of {size} tokens do not fit model.seq_length {seq}",
                          key="data.packed_sequence_specs.packed_sequence_size",
                          hint="raise model.seq_length or rerun the SFT data prep with a smaller pack_size")


def installed_line() -> BridgeLine:
    """The line of the installed megatron-bridge (:mod:`nemotron.training.version_check` has already
    refused an unsupported one when the job started)."""
    from .release import installed_line as line_of_installed

    return line_of_installed("megatron-bridge", line_for)


def run(kind: str, cfg: Mapping[str, Any], *, importer: Callable[[str], Any] = import_target,
        line: BridgeLine | None = None) -> int:
    """Train with Megatron-Bridge: ``pretrain`` or ``finetune`` with its GPT ``forward_step``.

    ``line``: the release line to call (default: the installed version's).
    In a job with ``[resilience]`` every rank beats per step through the entry point's
    ``callbacks`` (when it takes them), and an early stop (the library's ``sys.exit`` after
    its SIGTERM or duration save) returns :data:`~nemotron.training.resilience.EXIT_REQUEUE`
    so that the job is requeued (:mod:`nemotron.training.native_resilience`).
    """
    import inspect

    from nemo_runspec.runtime.ranks import global_rank

    from .native_resilience import NativeResilience

    line = line or installed_line()
    target, kwargs = recipe_for(kind, cfg, line)
    if global_rank() == 0:
        print(f"[{kind}] backend: Megatron-Bridge {line.name}: {target}("
              + ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) + ")", flush=True)
    container = build_config(kind, cfg, importer=importer, line=line)
    entry = importer(ENTRY_POINTS[kind])
    res = NativeResilience.from_env()
    kwargs = {"forward_step_func": importer(FORWARD_STEP)}
    if res.enabled:
        if "callbacks" in inspect.signature(entry).parameters:
            kwargs["callbacks"] = res.megatron_callbacks(importer(CALLBACK_MANAGER))
        else:
            res.unwatched(f"Megatron-Bridge's {ENTRY_POINTS[kind].rpartition('.')[2]}")
    try:
        entry(container, **kwargs)
    except SystemExit as exc:  # train.py ends early by sys.exit(exit_code) after saving
        if not res.enabled or exc.code not in (0, None):
            raise
        return res.stopped_early()
    return res.finished() if res.enabled else 0
