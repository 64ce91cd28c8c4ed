"""What our pretrain/SFT entry calls in each Megatron-Bridge release line.

The library's API for Nemotron 3 Nano changed between the versions the images of
:data:`nemotron.training.versions.TABLE` carry. A :class:`BridgeLine` is a range of
versions with one API; :func:`line_for` picks it from the installed version, and
:mod:`nemotron.training.megatron_bridge` builds and runs the job through it. Every
name and field a line uses is checked against that release's source
(``tests/nemotron/training/data/megatron_bridge-*.json``, written by
``scripts/megatron_bridge_api.py``; ``tests/nemotron/training/test_bridge_lines.py``).

What differs, read from the tags:

- 0.3.0rc0 (the nano-v3 branch in ``nemo:25.11.nemotron_3_nano``) and 0.3.0:
  ``nemotron_3_nano_pretrain_config(**kwargs)`` / ``nemotron_3_nano_finetune_config(**kwargs)``;
  the finetune function defaults to LoRA (``peft="lora"``), so full SFT passes ``peft=None``;
  the model is a ``Nemotron3NanoProvider``.
- 0.3.1: ``nemotron_3_nano_sft_config()`` (no arguments; full SFT), ``..._pretrain_config()``.
- 0.4.0 - 0.5.x: ``ConfigContainer.validation`` (``ValidationConfig``) holds
  ``eval_interval``/``eval_iters`` (``TrainingConfig``'s are deprecated); the model is a
  ``MambaModelProvider``; ``finetune`` takes ``callbacks``.
- 0.5.0: the export to Hugging Face (``examples/conversion/convert_checkpoints.py export``;
  0.6 moved it to ``scripts/conversion/convert.sh export``, whose CPU path
  ``scripts/conversion/cpu_backend.py`` makes the same calls) builds its bridge with
  ``AutoBridge.from_auto_config(megatron_path, hf_model)`` (the config synthesized from
  the checkpoint and the reference model); before, with
  ``AutoBridge.from_hf_pretrained(hf_model)``. Both then call ``export_ckpt``.
- 0.6.x: the nano3 names are aliases of the hardware-specific
  ``nemotron_3_nano_{pretrain,sft}_8gpu_h100_bf16_config``; the model is a
  ``HybridModelProvider``; SFT data is a ``GPTSFTDatasetConfig`` whose packed files go in
  ``offline_packing_specs`` (``enable_offline_packing=True``; ``FinetuningDatasetConfig``
  is a deprecated alias).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .release import in_range, range_text

NANO3 = "megatron.bridge.recipes.nemotronh.nemotron_3_nano"
CONFIG = "megatron.bridge.training.config"
#: the entry points and helpers every line calls under the same names
ENTRY_POINTS = {
    "pretrain": "megatron.bridge.training.pretrain.pretrain",
    "sft": "megatron.bridge.training.finetune.finetune",
}
FORWARD_STEP = "megatron.bridge.training.gpt_step.forward_step"
CALLBACK_MANAGER = "megatron.bridge.training.callbacks.CallbackManager"
#: the event names ``CallbackManager.register`` accepts (it raises ValueError for any other)
CALLBACK_EVENTS = "megatron.bridge.training.callbacks.VALID_EVENTS"
#: what a registered callback reads the step from: ``ctx.state.train_state.step``
#: (:meth:`nemotron.training.native_resilience.NativeResilience.megatron_callbacks`)
CALLBACK_CONTEXT = "megatron.bridge.training.callbacks.CallbackContext"
GLOBAL_STATE_TRAIN_STATE = "megatron.bridge.training.state.GlobalState.train_state"
TRAIN_STATE = "megatron.bridge.training.state.TrainState"
BLEND_FIELDS = "megatron.bridge.recipes.utils.dataset_utils.get_blend_fields_from_data_paths"
#: Megatron-Bridge's own Megatron -> Hugging Face export (the nano3 convert stage)
AUTO_BRIDGE = "megatron.bridge.AutoBridge"
#: the ConfigContainer section classes whose names do not change between lines
SECTION_CLASSES = {
    "train": f"{CONFIG}.TrainingConfig", "validation": f"{CONFIG}.ValidationConfig",
    "checkpoint": f"{CONFIG}.CheckpointConfig", "logger": f"{CONFIG}.LoggerConfig",
    "scheduler": f"{CONFIG}.SchedulerConfig", "optimizer": f"{CONFIG}.OptimizerConfig",
    # run.profile.nsys sets it (nemotron.training.nsys); 0.4+ inherit its fields from megatron.training
    "profiling": f"{CONFIG}.ProfilingConfig",
}
PRETRAIN_DATASET = f"{CONFIG}.GPTDatasetConfig"
#: our validation keys, and where lines with a ValidationConfig put them
VALIDATION_KEYS = {"train.eval_interval": "validation.eval_interval", "train.eval_iters": "validation.eval_iters"}


@dataclass(frozen=True)
class BridgeLine:
    """One Megatron-Bridge API line (see the module docstring).

    Attributes:
        name: how messages and the dry run call it.
        since, until: the versions it covers (``since <= v < until``).
        recipes: the recipe function per stage (``pretrain``, ``sft``).
        recipe_kwargs: the arguments each recipe function gets.
        kwargs_recipes: the recipe functions take keyword arguments (``**user_kwargs``):
            the reference's ``recipe.*`` keys are passed to them.
        model_class: the model provider the recipes build (its fields are what
            ``model.*`` keys may set).
        renames: our target field -> this line's (e.g. validation keys).
        sft_dataset: the SFT dataset config class built from the packed files.
        specs_class, specs_field: the ``PackedSequenceSpecs`` class and the dataset
            field holding it.
        sft_dataset_extra: further fields the SFT dataset gets.
        export_factory: the ``AutoBridge`` class method the release's own Megatron -> Hugging
            Face export builds its bridge with (``nano3 convert``).
    """

    name: str
    since: str
    until: str | None
    recipes: Mapping[str, str]
    model_class: str
    recipe_kwargs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    kwargs_recipes: bool = False
    renames: Mapping[str, str] = field(default_factory=dict)
    sft_dataset: str = f"{CONFIG}.FinetuningDatasetConfig"
    specs_class: str = "megatron.bridge.data.datasets.packed_sequence.PackedSequenceSpecs"
    specs_field: str = "packed_sequence_specs"
    sft_dataset_extra: Mapping[str, Any] = field(default_factory=dict)
    export_factory: str = "from_hf_pretrained"

    def recipe_call(self, kind: str) -> str:
        """``module.function(arg=value, ...)``: the recipe call, for messages and the dry run."""
        args = ", ".join(f"{k}={v!r}" for k, v in self.recipe_kwargs.get(kind, {}).items())
        return f"{self.recipes[kind]}({args})"

    def target(self, theirs: str) -> str:
        """The field this line sets for a target of the mapping (``train.eval_interval`` ...)."""
        return self.renames.get(theirs, theirs)

    def names(self) -> set[str]:
        """Every dotted name this line imports."""
        return {*self.recipes.values(), *ENTRY_POINTS.values(), FORWARD_STEP, BLEND_FIELDS,
                self.sft_dataset, self.specs_class}


_FINETUNE_KWARGS = {"sft": {"peft": None, "packed_sequence": True}}
_NEMOTRONH_PROVIDER = "megatron.bridge.models.nemotronh.Nemotron3NanoProvider"
_MAMBA_PROVIDER = "megatron.bridge.models.mamba.mamba_provider.MambaModelProvider"

LINES: tuple[BridgeLine, ...] = (
    BridgeLine("0.3.0 (finetune_config)", "0.3.0rc0", "0.3.1",
               {"pretrain": f"{NANO3}.nemotron_3_nano_pretrain_config",
                "sft": f"{NANO3}.nemotron_3_nano_finetune_config"},
               _NEMOTRONH_PROVIDER, recipe_kwargs=_FINETUNE_KWARGS, kwargs_recipes=True),
    BridgeLine("0.3.1 (sft_config)", "0.3.1", "0.4.0",
               {"pretrain": f"{NANO3}.nemotron_3_nano_pretrain_config", "sft": f"{NANO3}.nemotron_3_nano_sft_config"},
               _NEMOTRONH_PROVIDER),
    BridgeLine("0.4 (ValidationConfig)", "0.4.0", "0.5.0",
               {"pretrain": f"{NANO3}.nemotron_3_nano_pretrain_config", "sft": f"{NANO3}.nemotron_3_nano_sft_config"},
               _MAMBA_PROVIDER, renames=VALIDATION_KEYS),
    BridgeLine("0.5 (ValidationConfig, from_auto_config export)", "0.5.0", "0.6.0",
               {"pretrain": f"{NANO3}.nemotron_3_nano_pretrain_config", "sft": f"{NANO3}.nemotron_3_nano_sft_config"},
               _MAMBA_PROVIDER, renames=VALIDATION_KEYS, export_factory="from_auto_config"),
    BridgeLine("0.6 (hardware recipes, GPTSFTDatasetConfig)", "0.6.0", "0.7.0",
               {"pretrain": f"{NANO3}.nemotron_3_nano_pretrain_config", "sft": f"{NANO3}.nemotron_3_nano_sft_config"},
               "megatron.bridge.models.hybrid.hybrid_provider.HybridModelProvider", renames=VALIDATION_KEYS,
               sft_dataset="megatron.bridge.data.builders.gpt_sft.GPTSFTDatasetConfig",
               specs_class="megatron.bridge.data.packing.PackedSequenceSpecs", specs_field="offline_packing_specs",
               sft_dataset_extra={"enable_offline_packing": True}, export_factory="from_auto_config"),
)
#: every recipe function some line calls (a config naming one of these is checked against the installed line)
KNOWN_RECIPES = {name for line in LINES for name in line.recipes.values()}


def line_for(version: str) -> BridgeLine | None:
    """The line covering the installed ``version``, or None (not supported)."""
    return next((line for line in LINES if in_range(version, line.since, line.until)), None)


def supported_range() -> str:
    """The versions the lines cover, for messages (``0.3.0rc0 to 0.6.x``)."""
    return range_text(LINES[0].since, LINES[-1].until)
