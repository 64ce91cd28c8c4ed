#!/usr/bin/env python3
"""Record the Megatron-Bridge API our pretrain/SFT/convert entries call, per release, from source.

Megatron-Bridge imports transformer-engine, so no version of it imports without a
GPU; and the images carry versions the package registry does not serve. This
script reads a Megatron-Bridge git dir at a ref, and the Megatron-LM commit that ref
pins (``3rdparty/Megatron-LM``) for the ``megatron.core``/``megatron.training``
classes it extends, with ``ast`` (nothing imported or executed), and writes a JSON
manifest: for every dotted name :mod:`nemotron.training.bridge_lines` uses in any
line, its parameters (or a class's constructor parameters and fields, inherited
ones included), the ``ConfigContainer`` sections, and the literal constants our calls
depend on (``CallbackManager``'s ``VALID_EVENTS``). The tests
(``tests/nemotron/training/test_bridge_lines.py``) drive our entry with stand-ins
built from each manifest.

Regenerate every manifest (``fetch``/``git clone`` NVIDIA-NeMo/Megatron-Bridge and
NVIDIA/Megatron-LM first)::

    python scripts/megatron_bridge_api.py --mb-git-dir MB/.git --ml-git-dir ML/.git --all \\
        --out tests/nemotron/training/data

or one: ``--ref v0.4.0 > tests/nemotron/training/data/megatron_bridge-v0.4.0.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import api_source  # noqa: E402 - the sibling module, found through the line above

ROOT = Path(__file__).resolve().parents[1]

#: manifest label -> the ref it is read at (the labels the tests and docs use)
REFS = {
    # the branch the nemo:25.11.nemotron_3_nano image evidently carries (bridge_lines, versions.TABLE)
    "nano-v3": "1cedb0a9c5f79d2cd2b5226a86b794b9f0e048a8",
    "v0.3.0": "v0.3.0", "v0.3.1": "v0.3.1", "v0.4.0": "v0.4.0", "v0.4.2": "v0.4.2",
    "v0.5.0": "v0.5.0", "v0.5.1": "v0.5.1", "v0.6.0": "v0.6.0",
}
AUTO_BRIDGE_METHODS = ("from_hf_pretrained", "from_auto_config", "export_ckpt")


def names_to_record() -> list[str]:
    """Every dotted name some line of :mod:`nemotron.training.bridge_lines` uses."""
    sys.path.insert(0, str(ROOT / "src"))
    from nemotron.training import bridge_lines as bl

    names: set[str] = {bl.CALLBACK_MANAGER, f"{bl.CALLBACK_MANAGER}.register", bl.CALLBACK_CONTEXT,
                       bl.GLOBAL_STATE_TRAIN_STATE, bl.TRAIN_STATE, bl.PRETRAIN_DATASET,
                       *bl.SECTION_CLASSES.values(), *(f"{bl.AUTO_BRIDGE}.{m}" for m in AUTO_BRIDGE_METHODS)}
    for line in bl.LINES:
        names |= line.names() | {line.model_class}
    return sorted(names)


def constants_to_record() -> list[str]:
    """The module-level values our calls depend on (the callback events ``register`` accepts)."""
    sys.path.insert(0, str(ROOT / "src"))
    from nemotron.training import bridge_lines as bl

    return [bl.CALLBACK_EVENTS]


def _compact(desc: dict[str, Any] | None) -> dict[str, Any] | None:
    """A dataclass's ``params`` are its ``fields``: keep them once."""
    if desc and desc.get("kind") == "class" and desc.get("params") == desc.get("fields"):
        desc = {k: v for k, v in desc.items() if k != "params"}
    return desc


def manifest(mb_git_dir: str, ml_git_dir: str | None, ref: str, *, label: str) -> dict[str, Any]:
    """The manifest of Megatron-Bridge at ``ref`` (see the module docstring)."""
    commit = api_source.commit_of(mb_git_dir, ref)
    pinned = subprocess.run(["git", "--git-dir", mb_git_dir, "ls-tree", commit, "3rdparty/Megatron-LM"],
                            capture_output=True, text=True, check=True).stdout.split()
    ml_commit = pinned[2] if len(pinned) > 2 else None
    bridge = api_source.git_reader(mb_git_dir, commit, prefix="src/")
    routes = {}
    if ml_git_dir and ml_commit:
        core = api_source.git_reader(ml_git_dir, ml_commit)
        routes = {"megatron/core/": core, "megatron/training/": core}
    src = api_source.Source(api_source.routed(routes, bridge))
    container = src.find("megatron.bridge.training.config", "ConfigContainer")
    return {
        "source": {"repo": "NVIDIA-NeMo/Megatron-Bridge", "label": label, "ref": ref, "commit": commit,
                   "version": api_source.package_version(src, "megatron.bridge"),
                   "megatron_core": {"repo": "NVIDIA/Megatron-LM", "commit": ml_commit,
                                     "version": api_source.package_version(src, "megatron.core") if routes else None}},
        "names": {name: _compact(api_source.describe(src, name)) for name in names_to_record()},
        "constants": {name: api_source.constant(src, name) for name in constants_to_record()},
        "config_container": api_source.field_annotations(container[1]) if container else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb-git-dir", required=True, help="a Megatron-Bridge git dir")
    parser.add_argument("--ml-git-dir", help="a Megatron-LM git dir (for the megatron.core classes)")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--ref", help="one ref (a label of REFS, a tag or a commit); the manifest goes to stdout")
    which.add_argument("--all", action="store_true", help="every label of REFS, into --out")
    parser.add_argument("--out", default=str(ROOT / "tests/nemotron/training/data"))
    args = parser.parse_args(argv)
    todo = REFS if args.all else {args.ref: REFS.get(args.ref, args.ref)}
    for label, ref in todo.items():
        data = json.dumps(manifest(args.mb_git_dir, args.ml_git_dir, ref, label=label), indent=1, sort_keys=True)
        if args.all:
            (Path(args.out) / f"megatron_bridge-{label}.json").write_text(data + "\n")
        else:
            sys.stdout.write(data + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
