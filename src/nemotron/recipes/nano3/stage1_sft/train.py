# /// script
# requires-python = ">=3.11"
#
# [tool.runspec]
# schema = "1"
# name = "nano3/sft"
# image = "nvcr.io/nvidia/nemo:25.11.nemotron_3_nano"
#
# [tool.runspec.run]
# launch = "torchrun"
#
# [tool.runspec.config]
# dir = "./config"
# default = "default"
#
# [tool.runspec.resources]
# nodes = 1
# gpus_per_node = 8
# ///
"""nano3/sft: Megatron-Bridge supervised fine-tuning of Nemotron 3 Nano.

Run by the `nemotron` CLI as `python train.py --config <train.yaml> [key=value ...]`
(or under torchrun). The YAML is the recipe config after overrides; extra
``key=value`` arguments are applied as further overrides.

Backend choice:

1. ``backend: torch`` or ``fallback.enabled: true`` -> the tiny torch fallback;
2. else Megatron-Bridge (``megatron.bridge``) when it is importable;
3. else the fallback when the config has a ``fallback:`` section with ``enabled``
   not ``false`` (the ``tiny`` config has one);
4. else a message saying megatron.bridge is missing, exit code 3.

The fallback (nemotron.training) is a tiny GPT trained with plain PyTorch DDP on the SFT data prep's packed Parquet
sequences (loss only where loss_mask == 1, attention block-diagonal per conversation).
It resumes from ``checkpoint.save`` and ends with a ``final loss ...`` line.
See docs/training.md.
"""

from __future__ import annotations

import sys
from typing import Any

BACKEND = "megatron.bridge"


def main(argv: list[str] | None = None) -> int:
    """Load the config, choose the backend and train; returns the process exit code."""
    from nemotron.training.entry import main as entry_main

    return entry_main("sft", argv, description=__doc__.splitlines()[0], native_module=BACKEND,
                      script=__file__, native_run=_run)


def _run(container: dict[str, Any], extra: list[str]) -> int:
    """Megatron-Bridge sft with the resolved config (nemotron.training.megatron_bridge)."""
    from nemotron.training.megatron_bridge import run

    return run("sft", container)


if __name__ == "__main__":
    sys.exit(main())
