# /// script
# requires-python = ">=3.11"
#
# [tool.runspec]
# schema = "1"
# name = "nano3/data/prep/pretrain"
# image = "nvcr.io/nvidia/nemo:25.11.nemotron_3_nano"
#
# [tool.runspec.run]
# launch = "ray"
#
# [tool.runspec.config]
# dir = "./config/data_prep"
# default = "default"
#
# [tool.runspec.resources]
# nodes = 1
# gpus_per_node = 0
# ///
"""nano3/data/prep/pretrain: raw text -> Megatron .bin/.idx shards per split + blend.json.

One task per shard: locally in worker processes forked from this one (in this
process for small inputs), on a cluster as Ray tasks of the Ray instance in
$RAY_ADDRESS (see docs/data-prep.md). Usage::

    python data_prep.py --config config/data_prep/tiny.yaml [sample=100] [workers=2]

See docs/data-prep.md for inputs, outputs, resume and bad-record reporting.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_CONFIG = HERE / "config" / "data_prep" / "default.yaml"


def main(argv: list[str] | None = None) -> int:
    """Parse `--config` and overrides, run the pretrain data prep, return the exit code."""
    try:
        from nemotron.data_prep.cli import main as run
    except ImportError:  # running from a source checkout that is not installed
        sys.path.insert(0, str(HERE.parents[3]))
        from nemotron.data_prep.cli import main as run
    return run("pretrain", argv, default_config=DEFAULT_CONFIG)


if __name__ == "__main__":
    sys.exit(main())
