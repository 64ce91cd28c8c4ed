"""The pinned Megatron-Bridge wheel, for tests: where it is, names read from its source, and its
packed-SFT reader made importable on CPU.

``megatron/bridge/__init__.py`` imports transformer-engine (GPU only), but the data modules do
not: with ``megatron.bridge``, ``megatron.bridge.data`` and ``megatron.bridge.data.datasets``
registered in ``sys.modules`` as empty packages whose ``__path__`` points at the installed
folders, the real ``FinetuningDatasetBuilder``, ``PackedSequenceSpecs``, ``GPTSFTPackedDataset``
and packing helpers import and run with CPU torch + megatron-core. :func:`reader_modules`
does that and removes every ``megatron.bridge*`` module again afterwards, so later tests
(the backend probe in particular) still see "megatron.bridge does not import here".
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import os
import re
import sys
import types
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

from nemotron.training.megatron_bridge import PINNED


def wheel_root() -> Path:
    """``.../site-packages/megatron/bridge`` of the pinned wheel (skip, or fail on CI, when absent)."""
    try:
        dist = importlib.metadata.distribution("megatron-bridge")
    except importlib.metadata.PackageNotFoundError:
        if os.environ.get("CI") == "true":
            pytest.fail("megatron-bridge is not installed (scripts/bootstrap.sh test installs it --no-deps)")
        pytest.skip("megatron-bridge wheel not installed (scripts/bootstrap.sh test)")
    assert f"megatron-bridge=={dist.version}" == PINNED
    return Path(dist.locate_file("megatron/bridge"))


def source(relative: str) -> ast.Module:
    """The AST of ``megatron/bridge/<relative>``."""
    return ast.parse((wheel_root() / relative).read_text())


def function(tree: ast.Module, name: str) -> ast.FunctionDef:
    """A top-level function, or a method (``Class.method``), of ``tree``."""
    owner, _, fn = name.rpartition(".")
    body = tree.body
    if owner:
        body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner).body
    for node in body:
        if isinstance(node, ast.FunctionDef) and node.name == fn:
            return node
    raise AssertionError(f"{name} not found")


def class_fields(tree: ast.Module, name: str) -> set[str]:
    """Annotated attribute names of dataclass ``name`` (its own, not inherited)."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    raise AssertionError(f"class {name} not found")


def dict_keys(node: ast.AST, assigned_to: str) -> set[str]:
    """String keys of the dict literal assigned to ``assigned_to`` somewhere inside ``node``."""
    for sub in ast.walk(node):
        if (isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Dict)
                and any(isinstance(t, ast.Name) and t.id == assigned_to for t in sub.targets)):
            return {k.value for k in sub.value.keys if isinstance(k, ast.Constant)}
    raise AssertionError(f"no dict literal assigned to {assigned_to}")


def subscript_keys(node: ast.AST, of: str) -> set[str]:
    """String keys read as ``of["key"]`` or ``of[i]["key"]`` inside ``node`` (``of``: a name or
    attribute, e.g. ``p`` or ``indexed_dataset`` for ``self.indexed_dataset[idx]["input_ids"]``)."""
    pattern = re.compile(rf"(^|\.){re.escape(of)}(\[[^\]]*\])?$")
    keys = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Constant) and isinstance(sub.slice.value, str):
            if pattern.search(ast.unparse(sub.value)):
                keys.add(sub.slice.value)
    return keys


@contextmanager
def reader_modules() -> Iterator[SimpleNamespace]:
    """The wheel's finetune data classes, imported on CPU for the duration of the block."""
    root = wheel_root()
    saved = {k: v for k, v in sys.modules.items() if k.startswith("megatron.bridge")}
    env = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # sft.py would putenv it for child processes
    try:
        for name, sub in (("megatron.bridge", ""), ("megatron.bridge.data", "data"),
                          ("megatron.bridge.data.datasets", "data/datasets")):
            module = types.ModuleType(name)
            module.__path__ = [str(root / sub)]
            sys.modules[name] = module
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            builder = importlib.import_module("megatron.bridge.data.builders.finetuning_dataset")
            sft = importlib.import_module("megatron.bridge.data.datasets.sft")
            packed = importlib.import_module("megatron.bridge.data.datasets.packed_sequence")
            packing = importlib.import_module("megatron.bridge.data.datasets.packing_utils")
        yield SimpleNamespace(FinetuningDatasetBuilder=builder.FinetuningDatasetBuilder,
                              GPTSFTPackedDataset=sft.GPTSFTPackedDataset, create_sft_dataset=sft.create_sft_dataset,
                              PackedSequenceSpecs=packed.PackedSequenceSpecs,
                              fill_packing_strategy=packing.fill_packing_strategy)
    finally:
        for k in [k for k in sys.modules if k.startswith("megatron.bridge")]:
            del sys.modules[k]
        sys.modules.update(saved)
        if env is None:
            os.environ.pop("TOKENIZERS_PARALLELISM", None)
