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
import os
import warnings
from pathlib import Path
from types import SimpleNamespace as NS

import pytest
import yaml

from nemotron.training import megatron_bridge as mb

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
    return {
        "pretrain": {**common, "dataset": _mcore_fields(GPTDatasetConfig) | loader},
        "sft": {**common, "dataset": _class_fields(config, "FinetuningDatasetConfig") | loader},
    }


@pytest.mark.parametrize("kind", ["pretrain", "sft"])
def test_every_field_we_set_exists(kind, sections):
    fields = {**mb.FIELDS, **(mb.SFT_FIELDS if kind == "sft" else {})}
    missing = []
    for theirs in fields.values():
        section, _, name = theirs.partition(".")
        if name not in sections[kind][section]:
            missing.append(theirs)
    assert missing == []


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
    assert cfg["recipe"]["_target_"] == mb.RECIPES[kind]
    mapped = {**mb.FIELDS, **(mb.SFT_FIELDS if kind == "sft" else {})}
    unmapped = []
    for section in ("model", "train", "optimizer", "scheduler", "checkpoint", "logger", "data"):
        for key in cfg.get(section) or {}:
            dotted = f"{section}.{key}"
            if dotted not in mapped and dotted not in ("model.provider", "data.data_path", "data.split"):
                unmapped.append(dotted)
    assert unmapped == [], "keys the native backend would silently ignore"


def _stand_in(kind: str):
    """A ConfigContainer-shaped tree of the sections we set (the library's boundary)."""
    targets = {*mb.FIELDS.values(), *mb.SFT_FIELDS.values()}
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
