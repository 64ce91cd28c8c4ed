"""Our Megatron-Bridge entry against every supported release, read from that release's source.

No Megatron-Bridge version imports without a GPU, and the images carry versions the
package registry does not serve (0.3.0rc0 in ``nemo:25.11.nemotron_3_nano``, 0.4.x -
0.6.x in the 26.xx images). ``scripts/megatron_bridge_api.py`` reads each release at its
tag (and the Megatron-LM commit it pins) with ``ast`` into
``data/megatron_bridge-<label>.json``. These tests build stand-ins from each manifest
(a recipe function with that release's signature, a ``ConfigContainer`` whose sections
have exactly that release's fields, dataset classes with its fields, entry points with
its parameters) and drive :func:`nemotron.training.megatron_bridge.run` through them:
a recipe name, field, class or arity wrong for any supported release fails here. With
``MEGATRON_BRIDGE_SRC`` and ``MEGATRON_LM_SRC`` (git dirs) set, the manifests are
re-read from source and compared.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from nemo_runspec.errors import ConfigError
from nemotron.training import bridge_lines as bl
from nemotron.training import megatron_bridge as mb
from nemotron.training.nsys import native_profiling
from nemotron.training.versions import TABLE

from .manifests import MB_LABELS, MB_OF_VERSION, mb_manifest
from .manifests import signature_of as _signature

ROOT = Path(__file__).resolve().parents[3]
LABELS = MB_LABELS
MANIFEST_OF_VERSION = MB_OF_VERSION
manifest = mb_manifest


def line_of(m: dict[str, Any]) -> bl.BridgeLine:
    line = bl.line_for(m["source"]["version"])
    assert line is not None, f"no line for megatron-bridge {m['source']['version']}"
    return line


def supported_rows() -> list[Any]:
    return [row for row in TABLE if {"pretrain", "sft"} & set(row.stages)]


# --- the table's rows and the manifests ---------------------------------------------------


def test_every_supported_image_has_a_manifest_of_its_megatron_bridge():
    for row in supported_rows():
        version = row.versions["megatron-bridge"]
        assert version in MANIFEST_OF_VERSION, f"{row.image}: no manifest of megatron-bridge {version}"
        m = manifest(MANIFEST_OF_VERSION[version])
        assert bl.line_for(version) is line_of(m)  # the table's version and the source's are one line


@pytest.mark.parametrize("row", supported_rows(), ids=lambda r: r.image.rpartition(":")[2])
def test_our_sft_names_a_recipe_function_the_image_has(row):
    """What nano3 sft -c default calls in this image must exist in its megatron-bridge."""
    m = manifest(MANIFEST_OF_VERSION[row.versions["megatron-bridge"]])
    cfg = yaml.safe_load((ROOT / "src/nemotron/recipes/nano3/stage1_sft/config/default.yaml").read_text())
    for kind, config in (("sft", cfg), ("pretrain", yaml.safe_load(
            (ROOT / "src/nemotron/recipes/nano3/stage0_pretrain/config/default.yaml").read_text()))):
        target, kwargs = mb.recipe_for(kind, config, line_of(m))
        desc = m["names"].get(target)
        assert desc is not None, f"{row.image}: megatron-bridge {m['source']['version']} has no {target}"
        assert set(kwargs) <= {*desc["params"], *desc.get("varkw_keys", ())}, (target, kwargs)


# --- stand-ins built from a manifest --------------------------------------------------------


class Section(SimpleNamespace):
    """A dataclass-like section with exactly the release's fields (others do not exist)."""

    def __init__(self, fields: list[str]) -> None:
        super().__init__(**dict.fromkeys(fields))


def dataclass_of(m: dict[str, Any], dotted: str) -> type:
    """A dataclass with the release's fields of ``dotted`` (all defaulting to None)."""
    desc = m["names"][dotted]
    assert desc is not None, f"megatron-bridge {m['source']['version']} has no {dotted}"
    return dataclasses.make_dataclass(dotted.rpartition(".")[2], [(f, Any, dataclasses.field(default=None))
                                                                   for f in desc["fields"]], kw_only=True)


class Release:
    """An importer returning stand-ins of one release's objects; records every call."""

    def __init__(self, m: dict[str, Any], kind: str) -> None:
        self.m, self.kind, self.line = m, kind, line_of(m)
        self.calls: dict[str, inspect.BoundArguments] = {}
        self.registered: list[tuple[str, Any]] = []

    def container(self) -> SimpleNamespace:
        names = self.m["names"]
        tree = SimpleNamespace()
        sections = {**bl.SECTION_CLASSES, "model": self.line.model_class, "dataset": bl.PRETRAIN_DATASET}
        for section, dotted in sections.items():
            if section not in self.m["config_container"]:
                continue  # e.g. no ValidationConfig before 0.4
            assert names[dotted] is not None, dotted
            setattr(tree, section, Section(names[dotted]["fields"]))
        # the recipe's own SFT dataset (one that would download SQuAD), with the release's specs class
        if self.kind == "sft":
            old_specs = Section(names[self.line.specs_class]["fields"])
            old_specs.packed_sequence_size, old_specs.pad_seq_to_mult = 2048, 1
            tree.dataset = SimpleNamespace(dataset_name="squad", seq_length=2048, seed=5678, do_test=False,
                                           dataloader_type="batch", **{self.line.specs_field: old_specs})
        return tree

    def function(self, dotted: str, result: Any = None) -> Any:
        desc = self.m["names"][dotted]
        assert desc is not None, f"megatron-bridge {self.m['source']['version']} has no {dotted}"
        sig = _signature(desc, varkw="user_kwargs")

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[dotted] = sig.bind(*args, **kwargs)  # a wrong name or count raises TypeError
            unknown = set(self.calls[dotted].arguments.get("user_kwargs", {})) - set(desc.get("varkw_keys", ()))
            if desc.get("varkw") and unknown:  # **user_kwargs: Unpack[...Kwargs]: only that TypedDict's keys
                raise TypeError(f"{dotted} got unexpected keyword arguments {sorted(unknown)}")
            return result() if callable(result) else result
        call.__signature__ = sig  # type: ignore[attr-defined]  # run() asks whether it takes callbacks
        return call

    def callback_manager(self) -> type:
        """The release's ``CallbackManager``: ``register`` with its parameters, refusing an event
        outside the release's ``VALID_EVENTS`` (as the library's own ``register`` does)."""
        dotted, release = bl.CALLBACK_MANAGER, self
        register = _signature(self.m["names"][f"{dotted}.register"])
        events = self.m["constants"][bl.CALLBACK_EVENTS]
        assert events is not None, f"megatron-bridge {self.m['source']['version']} has no {bl.CALLBACK_EVENTS}"

        def register_fn(_self: Any, *args: Any, **kwargs: Any) -> None:
            bound = register.bind(*args, **kwargs)
            event, fn = bound.arguments["event_name"], bound.arguments["fn"]
            if event not in events:
                raise ValueError(f"Unknown event {event!r} in megatron-bridge {release.m['source']['version']}")
            release.calls.setdefault(f"{dotted}.register", bound)
            release.registered.append((event, fn))
        return type("CallbackManager", (), {"register": register_fn})

    def callback_context(self, step: int) -> Any:
        """A ``CallbackContext`` with the release's fields, its ``state.train_state`` a ``TrainState``
        of the release's fields (only where its ``GlobalState`` has that property)."""
        names = self.m["names"]
        assert names[bl.GLOBAL_STATE_TRAIN_STATE] is not None, bl.GLOBAL_STATE_TRAIN_STATE
        train_state = dataclass_of(self.m, bl.TRAIN_STATE)(step=step)
        return dataclass_of(self.m, bl.CALLBACK_CONTEXT)(state=SimpleNamespace(train_state=train_state))

    def importer(self, dotted: str) -> Any:
        line = self.line
        if dotted in (line.recipes["pretrain"], line.recipes["sft"]):
            return self.function(dotted, self.container)
        if dotted == bl.BLEND_FIELDS:
            return self.function(dotted, (None, [(["a"], None)] * 3, None))
        if dotted in (line.sft_dataset, line.specs_class):
            return dataclass_of(self.m, dotted)
        if dotted == bl.CALLBACK_MANAGER:
            return self.callback_manager()
        if dotted == mb.PROFILING_CONFIG:
            return dataclass_of(self.m, dotted)
        if dotted in (*bl.ENTRY_POINTS.values(), bl.FORWARD_STEP):
            return self.function(dotted, lambda: None)
        raise AssertionError(f"not a name of the {line.name} line: {dotted}")


def _our_config(kind: str, tmp_path: Path) -> dict[str, Any]:
    """The shipped default config with its artifact references filled in."""
    stage = {"pretrain": "stage0_pretrain", "sft": "stage1_sft"}[kind]
    cfg = yaml.safe_load((ROOT / f"src/nemotron/recipes/nano3/{stage}/config/default.yaml").read_text())
    for key in ("run", "publish"):
        cfg.pop(key)
    cfg["data"]["data_path"] = str(tmp_path)
    cfg["data"]["seq_length"] = cfg["model"]["seq_length"]
    cfg["checkpoint"]["pretrained_checkpoint"] = "/ckpt/pretrain" if kind == "sft" else None
    if kind == "sft":
        cfg["data"]["packed_sequence_specs"] = {
            "packed_sequence_size": 4096, "packed_train_data_path": f"{tmp_path}/packed/train.npy",
            "packed_val_data_path": f"{tmp_path}/packed/validation.npy",
            "packed_metadata_path": f"{tmp_path}/packed/packing_metadata.json"}
    return cfg


@pytest.mark.parametrize("kind", ["pretrain", "sft"])
@pytest.mark.parametrize("label", LABELS)
def test_run_drives_each_release_through_its_own_names_and_fields(label, kind, tmp_path, monkeypatch):
    monkeypatch.setenv("NEMOTRON_RESILIENCE_DIR", str(tmp_path / "res"))  # callbacks where the entry takes them
    monkeypatch.setenv("NEMOTRON_RESILIENCE_EXIT_AFTER", "3600")  # train.exit_duration_in_mins
    monkeypatch.setenv("NEMOTRON_NSYS_STEPS", "10:12")  # run.profile.nsys: ConfigContainer.profiling
    monkeypatch.setenv("NEMOTRON_NSYS_RANKS", "0,1")
    monkeypatch.setenv("RANK", "0")
    m = manifest(label)
    release = Release(m, kind)
    cfg = _our_config(kind, tmp_path)
    assert mb.run(kind, cfg, importer=release.importer, line=release.line) == 0

    line = release.line
    recipe = release.calls[line.recipes[kind]].arguments
    assert dict(recipe.get("user_kwargs", {})) == dict(line.recipe_kwargs.get(kind, {}))
    entry = release.calls[bl.ENTRY_POINTS[kind]].arguments
    container = entry["config"]
    assert container.train.train_iters == cfg["train"]["train_iters"]
    assert container.model.expert_model_parallel_size == 8 and container.optimizer.lr == cfg["optimizer"]["lr"]
    assert container.checkpoint.save == "/nemo_run/checkpoints"
    validation = container.validation if "validation" in m["config_container"] else container.train
    assert (validation.eval_interval, validation.eval_iters) == (1000, 10)
    assert (container.train.exit_signal_handler, container.train.exit_duration_in_mins) == (True, 60)
    profiling = container.profiling
    assert type(profiling).__name__ == "ProfilingConfig"
    assert (profiling.use_nsys_profiler, profiling.profile_step_start, profiling.profile_step_end,
            profiling.profile_ranks) == (True, 10, 12, [0, 1])
    takes_callbacks = "callbacks" in m["names"][bl.ENTRY_POINTS[kind]]["params"]
    assert ("callbacks" in entry) == takes_callbacks == (f"{bl.CALLBACK_MANAGER}.register" in release.calls)
    if takes_callbacks:  # each registered hook reads the step the way the release's context carries it
        assert sorted(event for event, _ in release.registered) == ["on_train_step_end", "on_train_step_start"]
        for _, hook in release.registered:
            hook(release.callback_context(step=4))  # ctx.state.train_state.step: AttributeError if it moved
    if kind == "pretrain":
        assert release.calls[bl.BLEND_FIELDS].arguments == {"per_split_data_args_path": f"{tmp_path}/blend.json"}
        assert container.dataset.sequence_length == 8192
    else:
        ds = container.dataset
        assert type(ds).__name__ == line.sft_dataset.rpartition(".")[2]
        assert ds.dataset_root == str(tmp_path) and ds.seq_length == 8192 and ds.seed == 5678
        specs = getattr(ds, line.specs_field)
        assert specs.packed_train_data_path == f"{tmp_path}/packed/train.npy" and specs.packed_sequence_size == 4096
        if "pad_seq_to_mult" in m["names"][line.specs_class]["fields"]:
            assert specs.pad_seq_to_mult == 1  # the recipe's, carried over
        for field, value in line.sft_dataset_extra.items():
            assert getattr(ds, field) == value
        assert container.checkpoint.pretrained_checkpoint == "/ckpt/pretrain"


@pytest.mark.parametrize("label", LABELS)
def test_every_field_we_set_exists_in_the_release(label):
    """FIELDS and SFT_FIELDS, after the line's renames, on the release's own classes."""
    m = manifest(label)
    line = line_of(m)
    names = m["names"]
    classes = {**bl.SECTION_CLASSES, "model": line.model_class}
    missing = []
    for kind, mapping in (("pretrain", mb.FIELDS), ("sft", {**mb.FIELDS, **mb.SFT_FIELDS})):
        for theirs in mapping.values():
            section, _, name = line.target(theirs).partition(".")
            if section == "dataset":
                dataset = bl.PRETRAIN_DATASET if kind == "pretrain" else line.sft_dataset
                first, _, rest = name.partition(".")
                if rest:  # packed_sequence_specs.<field>
                    ok = line.specs_field in names[dataset]["fields"] and rest in names[line.specs_class]["fields"]
                else:
                    ok = first in names[dataset]["fields"]
            else:
                ok = section in m["config_container"] and name in names[classes[section]]["fields"]
            if not ok:
                missing.append(f"{kind}: {line.target(theirs)}")
    for theirs in mb.RESILIENCE_FIELDS:  # a job with [resilience]
        section, _, name = theirs.partition(".")
        if name not in names[classes[section]]["fields"]:
            missing.append(f"resilience: {theirs}")
    profiling = native_profiling({"NEMOTRON_NSYS_STEPS": "1:2"}) or {}  # run.profile.nsys
    if "profiling" not in m["config_container"] or not names.get(mb.PROFILING_CONFIG):
        missing.append("profiling")
    else:
        missing += [f"profiling.{f}" for f in profiling if f not in names[mb.PROFILING_CONFIG]["fields"]]
    assert missing == []


def test_a_release_without_a_blend_field_fails_the_run(tmp_path):
    """The blend helper's results land on the release's GPTDatasetConfig fields, checked like the others."""
    m = manifest("v0.6.0")
    m["names"][bl.PRETRAIN_DATASET]["fields"].remove("blend_per_split")
    with pytest.raises(AttributeError, match="blend_per_split"):
        mb.run("pretrain", _our_config("pretrain", tmp_path), importer=Release(m, "pretrain").importer,
               line=line_of(m))


def test_an_event_the_release_lacks_fails_the_run(tmp_path, monkeypatch):
    """The stand-in CallbackManager refuses an event outside the release's VALID_EVENTS, as the real one does."""
    monkeypatch.setenv("NEMOTRON_RESILIENCE_DIR", str(tmp_path / "res"))
    monkeypatch.setenv("RANK", "0")
    m = manifest("v0.3.1")
    m["constants"][bl.CALLBACK_EVENTS].remove("on_train_step_start")
    with pytest.raises(ValueError, match="on_train_step_start"):
        mb.run("pretrain", _our_config("pretrain", tmp_path), importer=Release(m, "pretrain").importer,
               line=line_of(m))


def test_a_release_without_a_field_fails_the_run(tmp_path):
    """The stand-ins really enforce the manifest: a field the release lacks is an error."""
    m = manifest("v0.4.0")
    m["names"]["megatron.bridge.training.config.ValidationConfig"]["fields"].remove("eval_interval")
    with pytest.raises(AttributeError, match="eval_interval"):
        mb.run("pretrain", _our_config("pretrain", tmp_path), importer=Release(m, "pretrain").importer,
               line=line_of(m))


def test_a_recipe_the_release_lacks_is_one_line_naming_the_key():
    """A config written for 0.3.1 (nemotron_3_nano_sft_config) in the 0.3.0 line's image."""
    line = bl.line_for("0.3.0rc0")
    cfg = {"recipe": {"_target_": f"{bl.NANO3}.nemotron_3_nano_sft_config"}}
    with pytest.raises(ConfigError, match="nemotron_3_nano_sft_config, which megatron-bridge 0.3.0") as exc:
        mb.recipe_for("sft", cfg, line)
    assert exc.value.key == "recipe._target_" and "\n" not in str(exc.value)
    other = {"recipe": {"_target_": "megatron.bridge.recipes.qwen.qwen3.qwen3_8b_pretrain_config"}}
    assert mb.recipe_for("pretrain", other, line) == (other["recipe"]["_target_"], {})  # not ours: as written


def test_a_recipe_argument_the_release_lacks_fails_the_run(tmp_path):
    """**user_kwargs of 0.3.0's finetune_config are its Nemotron3NanoFinetuneKwargs: a key outside them fails."""
    cfg = _our_config("sft", tmp_path)
    cfg["recipe"]["packed_sequences"] = True  # misspelt
    m = manifest("v0.3.0")
    with pytest.raises(TypeError, match="packed_sequences"):
        mb.run("sft", cfg, importer=Release(m, "sft").importer, line=line_of(m))


def test_the_reference_recipe_keys_go_to_a_recipe_that_takes_them():
    """On the 0.3.0 line the reference's recipe.peft / packed_sequence are the function's arguments."""
    cfg = {"recipe": {"_target_": None, "peft": "lora", "packed_sequence": False}}
    assert mb.recipe_for("sft", cfg, bl.line_for("0.3.0"))[1] == {"peft": "lora", "packed_sequence": False}
    assert mb.recipe_for("sft", cfg, bl.line_for("0.3.1"))[1] == {}  # 0.3.1's sft_config() takes none


@pytest.mark.parametrize("label", LABELS)
def test_the_export_the_convert_stage_calls(label):
    m = manifest(label)
    assert "path" in m["names"]["megatron.bridge.AutoBridge.from_hf_pretrained"]["params"]
    assert m["names"]["megatron.bridge.AutoBridge.export_ckpt"]["params"][:2] == ["megatron_path", "hf_path"]


def _api_script() -> Any:
    spec = importlib.util.spec_from_file_location("megatron_bridge_api", ROOT / "scripts" / "megatron_bridge_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.allowed_skip("needs Megatron-Bridge and Megatron-LM git dirs, which a clean clone does not have")
@pytest.mark.parametrize("label", LABELS)
def test_manifest_is_what_the_source_says(label):
    mb_src, ml_src = os.environ.get("MEGATRON_BRIDGE_SRC"), os.environ.get("MEGATRON_LM_SRC")
    if not (mb_src and ml_src):
        pytest.skip("set MEGATRON_BRIDGE_SRC and MEGATRON_LM_SRC to git dirs to re-read the source")
    api = _api_script()
    fresh = api.manifest(mb_src, ml_src, api.REFS[label], label=label)
    assert json.loads(json.dumps(fresh)) == manifest(label)
