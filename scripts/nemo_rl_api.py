#!/usr/bin/env python3
"""Record the NeMo-RL API our GRPO entry calls, read from NeMo-RL's source.

NeMo-RL has no usable PyPI release (it ships in its container image), so the
test suite cannot import it. Instead this script reads a NeMo-RL checkout at a
pinned tag with ``ast`` (nothing is imported or executed) and writes a small
JSON manifest: for every dotted name in ``nemotron.training.nemo_rl.NAMES``,
its parameters (or a class's ``__init__`` / dataclass fields) and, for
functions returning a tuple literal, how many values they return; the keys of
the config ``TypedDict`` s (required and optional, bases merged); and the leaf
keys and values of the base GRPO config. ``tests/nemotron/training/test_nemo_rl.py``
checks our calls and config against that manifest.

Regenerate after changing the pin (``git clone https://github.com/NVIDIA-NeMo/RL``)::

    python scripts/nemo_rl_api.py --git-dir RL/.git --ref v0.4.0 \\
        > tests/nemotron/training/data/nemo_rl-v0.4.0.json

The test suite reruns this against ``$NEMO_RL_SRC`` (a git dir) when it is set
and fails if the committed manifest differs.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]

#: TypedDicts whose keys we check our master config against (section -> module.Class)
TYPED_DICTS = {
    "": "nemo_rl.algorithms.grpo.MasterConfig",
    "grpo": "nemo_rl.algorithms.grpo.GRPOConfig",
    "data": "nemo_rl.data.DataConfig",
    "loss_fn": "nemo_rl.algorithms.loss_functions.ClippedPGLossConfig",
    "checkpointing": "nemo_rl.utils.checkpoint.CheckpointingConfig",
    "cluster": "nemo_rl.distributed.virtual_cluster.ClusterConfig",
    "logger": "nemo_rl.algorithms.grpo.GRPOLoggerConfig",
    "policy": "nemo_rl.models.policy.PolicyConfig",
    "policy.tokenizer": "nemo_rl.models.policy.TokenizerConfig",
    "policy.generation": "nemo_rl.models.generation.interfaces.GenerationConfig",
    "env.math": "nemo_rl.environments.math_environment.MathEnvConfig",
}
BASE_CONFIG = "examples/configs/grpo_math_1B.yaml"

Reader = Callable[[str], "str | None"]


def git_reader(git_dir: str, ref: str) -> Reader:
    """Read ``path`` at ``ref`` from a git dir (``None`` when absent)."""
    def read(path: str) -> str | None:
        r = subprocess.run(["git", "--git-dir", git_dir, "show", f"{ref}:{path}"], capture_output=True, text=True)
        return r.stdout if r.returncode == 0 else None
    return read


def tree_reader(root: str) -> Reader:
    """Read ``path`` from a work tree (``None`` when absent)."""
    def read(path: str) -> str | None:
        p = Path(root) / path
        return p.read_text() if p.is_file() else None
    return read


class Source:
    """Top-level definitions of NeMo-RL modules, following ``from X import Y`` re-exports."""

    def __init__(self, read: Reader) -> None:
        self.read = read
        self._trees: dict[str, ast.Module | None] = {}

    def module(self, dotted: str) -> ast.Module | None:
        if dotted not in self._trees:
            base = dotted.replace(".", "/")
            text = self.read(base + ".py")
            if text is None:
                text = self.read(base + "/__init__.py")
            self._trees[dotted] = ast.parse(text) if text is not None else None
        return self._trees[dotted]

    def find(self, module: str, name: str, depth: int = 0) -> tuple[str, ast.AST] | None:
        """The definition of ``name`` as seen from ``module`` (its defining module and node)."""
        tree = self.module(module)
        if tree is None or depth > 8:
            return None
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name:
                return module, node
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        return self.find(node.module, alias.name, depth + 1)
        return None


def _params(fn: ast.FunctionDef, *, drop_self: bool = False) -> dict[str, Any]:
    args = fn.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args]]
    if drop_self and positional:
        positional = positional[1:]
    n_defaults = len(args.defaults)
    required = positional[: len(positional) - n_defaults] if n_defaults else list(positional)
    kwonly = [a.arg for a in args.kwonlyargs]
    required += [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    return {"params": positional + kwonly, "required": required}


def _returned_tuple_len(fn: ast.FunctionDef) -> int | None:
    sizes = {len(n.value.elts) for n in ast.walk(fn) if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple)}
    return sizes.pop() if len(sizes) == 1 else None


def _is_dataclass(cls: ast.ClassDef) -> bool:
    return any("dataclass" in ast.unparse(d) for d in cls.decorator_list)


def describe(src: Source, dotted: str) -> dict[str, Any] | None:
    """What a caller needs to know about the object ``dotted`` names."""
    module, _, name = dotted.rpartition(".")
    found = src.find(module, name)
    if found is None:
        return None
    defined_in, node = found
    out: dict[str, Any] = {"defined_in": defined_in}
    if isinstance(node, ast.FunctionDef):
        out.update(kind="function", **_params(node))
        n = _returned_tuple_len(node)
        if n is not None:
            out["returns_tuple_of"] = n
        return out
    assert isinstance(node, ast.ClassDef)
    out["decorators"] = [ast.unparse(d).split("(")[0] for d in node.decorator_list]
    init = next((b for b in node.body if isinstance(b, ast.FunctionDef) and b.name == "__init__"), None)
    if init is not None:
        out.update(kind="class", **_params(init, drop_self=True))
    elif _is_dataclass(node):
        fields = [s for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
        out.update(kind="class", params=[f.target.id for f in fields],  # type: ignore[union-attr]
                   required=[f.target.id for f in fields if f.value is None])  # type: ignore[union-attr]
    else:
        out.update(kind="class", params=[], required=[])
    return out


def typed_dict_keys(src: Source, module: str, name: str) -> dict[str, list[str]] | None:
    """Required and optional keys of a TypedDict, bases merged (``NotRequired[...]`` is optional)."""
    found = src.find(module, name)
    if found is None or not isinstance(found[1], ast.ClassDef):
        return None
    defined_in, cls = found
    required: set[str] = set()
    optional: set[str] = set()
    for base in cls.bases:
        base_name = ast.unparse(base)
        if base_name != "TypedDict":
            inherited = typed_dict_keys(src, defined_in, base_name)
            if inherited:
                required |= set(inherited["required"])
                optional |= set(inherited["optional"])
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            (optional if "NotRequired" in ast.unparse(stmt.annotation) else required).add(stmt.target.id)
    return {"required": sorted(required), "optional": sorted(optional - required)}


def leaf_keys(tree: Any, prefix: str = "") -> list[str]:
    """Dotted paths of every key in a nested mapping (inner keys included)."""
    out: list[str] = []
    if isinstance(tree, dict):
        for k, v in tree.items():
            path = f"{prefix}{k}"
            out.append(path)
            out += leaf_keys(v, path + ".")
    return out


def manifest(read: Reader, names: dict[str, str], *, ref: str, commit: str) -> dict[str, Any]:
    """The manifest for one NeMo-RL source tree (see the module docstring)."""
    src = Source(read)
    base_text = read(BASE_CONFIG)
    base = yaml.safe_load(base_text) if base_text else None
    return {
        "source": {"repo": "NVIDIA-NeMo/RL", "ref": ref, "commit": commit},
        "names": {key: describe(src, dotted) for key, dotted in sorted(names.items())},
        "typed_dicts": {section: typed_dict_keys(src, *dotted.rsplit(".", 1))
                        for section, dotted in TYPED_DICTS.items()},
        # what grpo_train saves and nemotron.training.native_resilience reads back
        "grpo_save_state": typed_dict_keys(src, "nemo_rl.algorithms.grpo", "GRPOSaveState"),
        "base_config": {"path": BASE_CONFIG, "has_defaults": bool(base and "defaults" in base),
                        "keys": sorted(leaf_keys(base)) if base else None, "values": base},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--git-dir", help="a NeMo-RL git dir (read at --ref)")
    where.add_argument("--tree", help="a NeMo-RL work tree (already at the pinned ref)")
    parser.add_argument("--ref", default="v0.4.0")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    from nemotron.training.nemo_rl import NAMES

    if args.git_dir:
        read = git_reader(args.git_dir, args.ref)
        commit = subprocess.run(["git", "--git-dir", args.git_dir, "rev-parse", f"{args.ref}^{{commit}}"],
                                capture_output=True, text=True, check=True).stdout.strip()
    else:
        read, commit = tree_reader(args.tree), "work-tree"
    json.dump(manifest(read, NAMES, ref=args.ref, commit=commit), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
