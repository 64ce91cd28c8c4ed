#!/usr/bin/env python3
"""Record the NeMo-RL API our GRPO entry calls, per release, read from NeMo-RL's source.

NeMo-RL has no usable PyPI release (it ships in its container image), so the
test suite cannot import it. Instead this script reads a NeMo-RL git dir at a
ref with ``ast`` (nothing is imported or executed; :mod:`api_source`) and writes a
small JSON manifest: for every dotted name some line of
``nemotron.training.rl_lines`` uses, its parameters (or a class's ``__init__`` /
dataclass fields) and, for functions returning a tuple, how many values; the keys
of the config ``TypedDict`` s (required and optional, bases merged); and the leaf
keys and values of the base GRPO config. ``tests/nemotron/training/test_nemo_rl.py``
checks our calls and config against every manifest.

Regenerate every manifest (``git clone https://github.com/NVIDIA-NeMo/RL``)::

    python scripts/nemo_rl_api.py --git-dir RL/.git --all --out tests/nemotron/training/data

or one: ``--ref v0.4.0 > tests/nemotron/training/data/nemo_rl-v0.4.0.json``. The test
suite reruns this against ``$NEMO_RL_SRC`` (a git dir) when it is set and fails if a
committed manifest differs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api_source import (  # noqa: E402,F401 - the sibling module; names re-exported for the tests
    Reader,
    Source,
    class_kind,
    commit_of,
    describe,
    git_reader,
    package_version,
    tree_reader,
    typed_dict_keys,
)

ROOT = Path(__file__).resolve().parents[1]

#: TypedDicts whose keys we check our master config against (section -> module.Class)
TYPED_DICTS = {
    "": "nemo_rl.algorithms.grpo.MasterConfig",
    "grpo": "nemo_rl.algorithms.grpo.GRPOConfig",
    "data": "nemo_rl.data.DataConfig",
    "data.train": "nemo_rl.data.ResponseDatasetConfig",
    "data.validation": "nemo_rl.data.ResponseDatasetConfig",
    "data.default": "nemo_rl.data.ResponseDatasetConfig",
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
#: manifest label -> the ref it is read at
REFS = {
    "v0.4.0": "v0.4.0",
    # the branch the nemo-rl:v0.4.0.nemotron_3_nano image evidently carries (nemotron.training.versions)
    "nano-v3": "90ecaaccdf66fb92f814b2325db81a0105ed933a",
    "v0.5.0": "v0.5.0", "v0.6.0": "v0.6.0", "v0.7.0": "v0.7.0",
}


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
        "source": {"repo": "NVIDIA-NeMo/RL", "ref": ref, "commit": commit,
                   "version": package_version(src, "nemo_rl")},
        "names": {key: describe(src, dotted) for key, dotted in sorted(names.items())},
        "master_config_kind": class_kind(src, TYPED_DICTS[""]),
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
    where.add_argument("--git-dir", help="a NeMo-RL git dir (read at --ref, or every ref of REFS with --all)")
    where.add_argument("--tree", help="a NeMo-RL work tree (already at the ref)")
    parser.add_argument("--ref", default="v0.4.0", help="a label of REFS, a tag or a commit")
    parser.add_argument("--all", action="store_true", help="every label of REFS, into --out (needs --git-dir)")
    parser.add_argument("--out", default=str(ROOT / "tests/nemotron/training/data"))
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    from nemotron.training.rl_lines import ALL_NAMES

    if args.all and args.git_dir:
        for label, ref in REFS.items():
            data = manifest(git_reader(args.git_dir, ref), ALL_NAMES, ref=ref, commit=commit_of(args.git_dir, ref))
            (Path(args.out) / f"nemo_rl-{label}.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        return 0
    if args.git_dir:
        ref = REFS.get(args.ref, args.ref)
        read, commit = git_reader(args.git_dir, ref), commit_of(args.git_dir, ref)
    else:
        read, ref, commit = tree_reader(args.tree), args.ref, "work-tree"
    json.dump(manifest(read, ALL_NAMES, ref=ref, commit=commit), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
