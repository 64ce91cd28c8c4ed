# /// script
# requires-python = ">=3.11"
#
# [tool.runspec]
# schema = "1"
# name = "nano3/data/prep/rl"
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
"""nano3/data/prep/rl: data preparation for the rl stage (placeholder).

The data-prep runtime replaces this body; the CLI runs it as
`python data_prep.py --config <config.yaml> [args...]`.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Prepare the rl data (not implemented yet)."""
    raise NotImplementedError("nano3/data/prep/rl is not implemented yet")


if __name__ == "__main__":
    sys.exit(main())
