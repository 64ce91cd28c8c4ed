"""Our Megatron-Bridge mapping checked against the pinned wheel's own source.

megatron.bridge imports transformer-engine (GPU only), so it cannot be imported
here: the wheel is installed with --no-deps (scripts/bootstrap.sh test) and read
as source (AST: dataclass fields, function names and parameters); the
megatron-core dataclasses it extends are importable and read with
dataclasses.fields. A renamed field or function in a new pin fails a test.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.metadata
import io
import os
import warnings
from pathlib import Path
from types import SimpleNamespace as NS

import pytest
import yaml

from nemo_runspec.errors import ConfigError
from nemotron.training import megatron_bridge as mb
from tests.nemotron import megatron_bridge_wheel as mbw

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def wheel() -> Path:
    try:
        dist = importlib.metadata.distribution("megatron-bridge")
    except importlib.metadata.PackageNotFoundError:
        if os.environ.get("CI") == "true":
            pytest.fail("megatron-bridge is not installed (scripts/bootstrap.sh test installs it --no-deps)")
        pytest.skip("megatron-bridge wheel not installed (scripts/bootstrap.sh test)")
    assert f"megatron-bridge=={dist.version}" == mb.PINNED
    return Path(dist.locate_file("megatron/bridge"))


def _module_path(root: Path, dotted_module: str) -> Path:
    return root.parent.parent / (dotted_module.replace(".", "/") + ".py")


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def _class_fields(tree: ast.Module, name: str) -> set[str]:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    raise AssertionError(f"class {name} not found")


def _function_params(path: Path, name: str) -> list[str]:
    for node in _tree(path).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return [a.arg for a in [*node.args.args, *node.args.kwonlyargs]]
    raise AssertionError(f"{name} not defined in {path}")


def _mcore_fields(cls) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


@pytest.fixture(scope="module")
def sections(wheel) -> dict[str, dict[str, set[str]]]:
    """Field names of each ConfigContainer section, per kind, from the wheel + megatron-core."""
    warnings.filterwarnings("ignore")
    from megatron.core.datasets.gpt_dataset import GPTDatasetConfig
    from megatron.core.optimizer.optimizer_config import OptimizerConfig
    from megatron.core.transformer.transformer_config import TransformerConfig

    config = _tree(wheel / "training" / "config.py")
    container = _class_fields(config, "ConfigContainer")
    assert {"train", "model", "optimizer", "scheduler", "dataset", "logger", "checkpoint"} <= container
    mamba = _class_fields(_tree(wheel / "models" / "mamba" / "mamba_provider.py"), "MambaModelProvider")
    common = {
        "train": _class_fields(config, "TrainingConfig"),
        "checkpoint": _class_fields(config, "CheckpointConfig"),
        "logger": _class_fields(config, "LoggerConfig"),
        "scheduler": _class_fields(config, "SchedulerConfig"),
        "optimizer": _mcore_fields(OptimizerConfig),
        # Nemotron3NanoProvider -> NemotronHModelProvider -> MambaModelProvider(TransformerConfig)
        "model": mamba | _mcore_fields(TransformerConfig),
    }
    loader = _class_fields(config, "DataloaderConfig")
    specs = _class_fields(_tree(wheel / "data" / "datasets" / "packed_sequence.py"), "PackedSequenceSpecs")
    return {
        "pretrain": {**common, "dataset": _mcore_fields(GPTDatasetConfig) | loader},
        "sft": {**common, "dataset": _class_fields(config, "FinetuningDatasetConfig") | loader,
                "dataset.packed_sequence_specs": specs},
    }


@pytest.mark.parametrize("kind", ["pretrain", "sft"])
def test_every_field_we_set_exists(kind, sections):
    fields = {**mb.FIELDS, **(mb.SFT_FIELDS if kind == "sft" else {})}
    missing = []
    for theirs in fields.values():
        section, _, name = theirs.rpartition(".")
        parent, _, attr = section.rpartition(".")
        if parent and attr not in sections[kind][parent]:  # e.g. dataset.packed_sequence_specs
            missing.append(section)
        if name not in sections[kind][section]:
            missing.append(theirs)
    assert missing == []
    if kind == "sft":  # the four PackedSequenceSpecs fields the SFT data prep provides
        assert {t.rpartition(".")[2] for t in fields.values() if ".packed_sequence_specs." in t} == {
            "packed_sequence_size", "packed_train_data_path", "packed_val_data_path", "packed_metadata_path"}


@pytest.mark.parametrize("kind", ["pretrain", "sft"])
def test_recipe_functions_and_entry_points_exist(kind, wheel):
    module, _, name = mb.RECIPES[kind].rpartition(".")
    assert _function_params(_module_path(wheel, module), name) == []  # called with no arguments
    module, _, name = mb.ENTRY_POINTS[kind].rpartition(".")
    assert _function_params(_module_path(wheel, module), name)[:2] == ["config", "forward_step_func"]
    module, _, name = mb.FORWARD_STEP.rpartition(".")
    assert _function_params(_module_path(wheel, module), name)
    module, _, name = mb.BLEND_FIELDS.rpartition(".")
    assert "per_split_data_args_path" in _function_params(_module_path(wheel, module), name)


@pytest.mark.parametrize(("stage", "kind"), [("stage0_pretrain", "pretrain"), ("stage1_sft", "sft")])
def test_shipped_configs_name_the_pinned_recipe_and_only_mapped_keys(stage, kind):
    cfg = yaml.safe_load((ROOT / f"src/nemotron/recipes/nano3/{stage}/config/default.yaml").read_text())
    assert cfg["recipe"]["_target_"] is None  # the image's own: on the pinned wheel's line, RECIPES
    assert mb.recipe_for(kind, cfg, mb.PINNED_LINE) == (mb.RECIPES[kind], {})
    mapped = {**mb.FIELDS, **(mb.SFT_FIELDS if kind == "sft" else {})}
    unmapped = []
    for section in ("model", "train", "optimizer", "scheduler", "checkpoint", "logger", "data"):
        for dotted in _leaves(cfg.get(section) or {}, section):
            if dotted not in mapped and dotted not in ("model.provider", "data.data_path", "data.split"):
                unmapped.append(dotted)
    assert unmapped == [], "keys the native backend would silently ignore"


def _leaves(node: dict, prefix: str) -> list[str]:
    out = []
    for key, value in node.items():
        dotted = f"{prefix}.{key}"
        out += _leaves(value, dotted) if isinstance(value, dict) else [dotted]
    return out


def _stand_in(kind: str):
    """A ConfigContainer-shaped tree of the sections we set (the library's boundary)."""
    targets = {t for t in (*mb.FIELDS.values(), *mb.SFT_FIELDS.values()) if t.count(".") == 1}
    names = {s: {k.split(".", 1)[1] for k in targets if k.startswith(s + ".")}
             for s in ("model", "train", "optimizer", "scheduler", "dataset", "checkpoint", "logger")}
    tree = NS(**{s: NS(**dict.fromkeys(fields)) for s, fields in names.items()})
    tree.dataset.blend = tree.dataset.blend_per_split = tree.dataset.split = None
    return tree


def test_build_and_run_set_the_tree_and_call_the_entry_point(tmp_path):
    calls = {}

    def importer(dotted):
        if dotted == mb.RECIPES["pretrain"]:
            return lambda: _stand_in("pretrain")
        if dotted == mb.BLEND_FIELDS:
            def blend(**kw):
                calls["blend"] = kw
                return None, [(["a"], None)] * 3, None
            return blend
        if dotted == mb.ENTRY_POINTS["pretrain"]:
            return lambda config, forward_step_func: calls.update(config=config, step=forward_step_func)
        if dotted == mb.FORWARD_STEP:
            return "forward_step"
        raise AssertionError(dotted)

    cfg = {"recipe": {"_target_": mb.RECIPES["pretrain"]}, "train": {"train_iters": 7, "micro_batch_size": 1},
           "optimizer": {"lr": 0.1}, "data": {"data_path": str(tmp_path), "seq_length": 64},
           "checkpoint": {"save": "/ckpt", "load": None}}
    assert mb.run("pretrain", cfg, importer=importer) == 0
    container = calls["config"]
    assert (container.train.train_iters, container.train.micro_batch_size, container.optimizer.lr) == (7, 1, 0.1)
    assert container.dataset.sequence_length == 64 and container.checkpoint.save == "/ckpt"
    assert container.checkpoint.load is None  # None leaves the recipe's value
    assert calls["blend"] == {"per_split_data_args_path": f"{tmp_path}/blend.json"}
    assert container.dataset.blend_per_split == [(["a"], None)] * 3
    assert calls["step"] == "forward_step"


def test_a_field_missing_in_the_library_is_an_error():
    tree = _stand_in("pretrain")
    del tree.train.train_iters
    with pytest.raises(AttributeError, match="train_iters"):
        mb.build_config("pretrain", {"train": {"train_iters": 3}}, importer=lambda d: (lambda: tree))


# --- SFT: the data prep's packed files through PackedSequenceSpecs -----------------------------


def test_packed_layout_names_match_the_wheel(wheel):
    """What the SFT data prep writes, against the wheel code that writes and reads that layout."""
    from nemotron.data_prep.sft import megatron_bridge_pack, packed_sequence_specs, packing_stats

    packing = _tree(wheel / "data" / "datasets" / "packing_utils.py")
    sft = _tree(wheel / "data" / "datasets" / "sft.py")
    fill = mbw.function(packing, "fill_packing_strategy")
    ours = megatron_bridge_pack({"input_ids": [5, 6, 7, 8, 0], "loss_mask": [0, 1, 1, 0, 0],
                                 "seq_start_ids": [0, 2], "num_tokens": 4})
    # the item fill_packing_strategy saves, and what GPTSFTPackedDataset.__getitem__ reads of it
    assert set(ours) == mbw.dict_keys(fill, "item_dict")
    assert mbw.subscript_keys(mbw.function(sft, "GPTSFTPackedDataset.__getitem__"), "indexed_dataset") == set(ours)
    # its loss-mask shift: `x[1:] + [False]` per sequence (the mask moves one left, the last position is 0)
    assert "[x[1:] + [False] for x in loss_mask]" in ast.unparse(fill)
    assert ours == {"input_ids": [5, 6, 7, 8], "loss_mask": [1, 0, 0, 0], "seq_start_id": [0, 2]}
    # the packing metadata: the keys create_packing_strategy records, and those collate_fn reads
    stats = packing_stats([ours], 8)
    assert set(stats) == mbw.dict_keys(mbw.function(packing, "create_packing_strategy"), "packing_metadata")
    read = mbw.subscript_keys(mbw.function(sft, "GPTSFTPackedDataset.collate_fn"), "p")
    assert read and read <= set(stats)
    assert stats == {"dataset_max_seqlen": 1, "max_samples_per_bin": 2, "packing_factor": 2.0,
                     "packing_efficiency": 25.0, "pack_size": 8, "min_packed_seqlen": 2}
    # what the artifact publishes for PackedSequenceSpecs, and what the SFT config maps
    spec_fields = mbw.class_fields(_tree(wheel / "data" / "datasets" / "packed_sequence.py"), "PackedSequenceSpecs")
    assert set(packed_sequence_specs(8)) <= spec_fields
    cfg = yaml.safe_load((ROOT / "src/nemotron/recipes/nano3/stage1_sft/config/default.yaml").read_text())
    mapped = cfg["data"]["packed_sequence_specs"]
    assert set(mapped) == set(packed_sequence_specs(8))
    for key, value in mapped.items():
        assert value.endswith(f"${{art:data,metadata.packed_sequence_specs.{key}}}")


def _finetuning_dataset_class(wheel):
    """A dataclass with exactly the fields of the wheel's FinetuningDatasetConfig (+ DataloaderConfig):
    training/config.py imports transformer-engine, so the real class cannot be imported here."""
    config = _tree(wheel / "training" / "config.py")
    defaults: dict[str, object] = {}
    for cls in ("DataloaderConfig", "FinetuningDatasetConfig"):  # base first: the subclass overrides
        node = next(n for n in config.body if isinstance(n, ast.ClassDef) and n.name == cls)
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                try:
                    defaults[stmt.target.id] = ast.literal_eval(stmt.value) if stmt.value else None
                except ValueError:
                    defaults[stmt.target.id] = None
    fields = [(n, object, dataclasses.field(default=v)) for n, v in sorted(defaults.items())]
    return (dataclasses.make_dataclass("FinetuningDatasetConfig", fields, kw_only=True),
            _class_fields(config, "DataloaderConfig"))


@pytest.fixture
def published_sft(tmp_path, monkeypatch):
    """The tiny SFT data prep on the shipped sample, published (as the tiny training config expects)."""
    from nemo_runspec.artifacts.registry import ArtifactRegistry, set_registry
    from nemotron.data_prep.cli import load_config
    from nemotron.data_prep.sft import run_sft

    for var in ("NEMOTRON_ARTIFACTS_ROOT", "RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        monkeypatch.delenv(var, raising=False)
    registry = ArtifactRegistry(tmp_path / "registry")
    set_registry(registry)
    cfg = load_config(ROOT / "src/nemotron/recipes/nano3/stage1_sft/config/data_prep/tiny.yaml")
    cfg.output_dir, cfg.workers = str(tmp_path / "sft"), 0
    run_sft(cfg, stream=io.StringIO())
    (tmp_path / "ckpt").mkdir()
    registry.publish("nano3-pretrain-model-tiny", tmp_path / "ckpt")
    yield registry.resolve("nano3-sft-data-tiny:latest")
    set_registry(None)


def _sft_build(resolved, ds_cls, m, **model):
    recipe_dataset = NS(dataset_name="squad", seq_length=2048, seed=5678, num_workers=1, do_test=False,
                        dataloader_type="batch", dataset_kwargs={"pad_to_max_length": True},
                        packed_sequence_specs=NS(packed_sequence_size=2048, pad_seq_to_mult=1, pad_cu_seqlens=False))
    container = _stand_in("sft")
    container.dataset = recipe_dataset
    classes = {mb.FINETUNING_DATASET: ds_cls, mb.PACKED_SPECS: m.PackedSequenceSpecs}

    def importer(dotted):
        return (lambda: container) if dotted == mb.RECIPES["sft"] else classes[dotted]

    return mb.build_config("sft", {**resolved, "model": {**resolved["model"], **model}}, importer=importer)


def test_sft_config_resolves_to_the_packed_files_finetune_builds_from(wheel, published_sft):
    """tiny.yaml resolved against the published data -> build_config -> the wheel's own
    PackedSequenceSpecs and FinetuningDatasetBuilder, as finetune's dataset provider calls it."""
    from nemo_runspec.config import load_config_file
    from nemo_runspec.config.resolvers import register_resolvers
    from nemotron.training.entry import native_config

    register_resolvers()
    art = published_sft
    resolved = native_config(load_config_file(str(ROOT / "src/nemotron/recipes/nano3/stage1_sft/config/tiny.yaml")))
    assert resolved["data"]["packed_sequence_specs"] == {
        "packed_sequence_size": 512, "packed_train_data_path": f"{art.path}/packed/train.npy",
        "packed_val_data_path": f"{art.path}/packed/validation.npy",
        "packed_metadata_path": f"{art.path}/packed/packing_metadata.json"}
    ds_cls, loader_fields = _finetuning_dataset_class(wheel)
    with mbw.reader_modules() as m:
        ds = _sft_build(resolved, ds_cls, m).dataset
        assert isinstance(ds, ds_cls) and isinstance(ds.packed_sequence_specs, m.PackedSequenceSpecs)
        specs = ds.packed_sequence_specs
        assert specs.packed_train_data_path == Path(art.path) / "packed" / "train.npy"  # a Path: its checks ran
        assert (specs.packed_sequence_size, specs.pad_seq_to_mult, specs.pad_cu_seqlens) == (512, 1, False)
        # ours win; the rest is the recipe's
        assert (ds.dataset_root, ds.seq_length, ds.num_workers) == (art.path, 512, 4)
        assert (ds.seed, ds.do_test, ds.dataloader_type, ds.dataset_kwargs) == (5678, False, "batch",
                                                                                 {"pad_to_max_length": True})
        assert not hasattr(ds, "dataset_name")  # not an HFDatasetConfig: nothing is downloaded
        # megatron.bridge.data.utils.finetuning_train_valid_test_datasets_provider, by hand
        builder = m.FinetuningDatasetBuilder(tokenizer=NS(eos_id=0), **{
            f.name: getattr(ds, f.name) for f in dataclasses.fields(ds) if f.name not in loader_fields})
        train, valid, test = builder.build()
        splits = art.metadata["splits"]
        assert (len(train), len(valid), test) == (splits["train"]["packs"], splits["valid"]["packs"], None)
        assert train.collate_fn([train[0]])["tokens"].shape == (1, 512)

        with pytest.raises(ConfigError, match="do not fit model.seq_length 256"):
            _sft_build(resolved, ds_cls, m, seq_length=256)
        missing = {**resolved, "data": {**resolved["data"], "packed_sequence_specs": {
            **resolved["data"]["packed_sequence_specs"], "packed_val_data_path": f"{art.path}/packed/nope.npy"}}}
        with pytest.raises(AssertionError, match="does not exist"):
            _sft_build(missing, ds_cls, m)
