# /// script
# requires-python = ">=3.11"
#
# [tool.runspec]
# schema = "1"
# name = "nano3/rl"
# image = "nvcr.io/nvidia/nemo-rl:v0.4.0.nemotron_3_nano"
#
# [tool.runspec.run]
# launch = "ray"
#
# [tool.runspec.config]
# dir = "./config"
# default = "default"
#
# [tool.runspec.resources]
# nodes = 1
# gpus_per_node = 8
#
# # Scale matrix (docs/runspec/v1/spec.md section 8; sources: docs/sweeps.md, "The nano3 matrices").
# # Full-size config: NeMo-RL v0.7.0's GRPO recipe for Nemotron 3 Nano 30B-A3B,
# # examples/configs/recipes/llm/grpo-nanov3-30BA3B-2n8g-megatron_generation.yaml (cluster:
# # 2 nodes x 8 GPUs, the BF16 checkpoint). NeMo-RL sizes its Ray cluster from cluster.num_nodes
# # and cluster.gpus_per_node, not from the allocation, so the cell sets them.
# [[tool.runspec.scales]]
# configs = ["default"]
# gpu_types = ["h100"]
# nodes = [2]
# precisions = ["bf16"]
# gpus_per_node = 8
# note = "NeMo-RL v0.7.0 examples/configs/recipes/llm/grpo-nanov3-30BA3B-2n8g-megatron_generation.yaml"
# overrides = { "cluster.num_nodes" = 2, "cluster.gpus_per_node" = 8 }
#
# # The tiny config: the CPU smoke stage (fp32) on CPU nodes (gpus_per_node = 0).
# [[tool.runspec.scales]]
# configs = ["tiny"]
# gpu_types = ["cpu"]
# nodes = [1, 2]
# exact = false
# precisions = ["fp32"]
# note = "the CPU fallback (docs/training.md), tested on the local two-node cluster"
# ///
"""nano3/rl: NeMo-RL GRPO training of Nemotron 3 Nano.

Run by the `nemotron` CLI as `python train.py --config <train.yaml> [key=value ...]`
(or under torchrun). The YAML is the recipe config after overrides; extra
``key=value`` arguments are applied as further overrides.

Backend choice:

1. ``backend: torch`` or ``fallback.enabled: true`` -> the tiny torch fallback;
2. else NeMo-RL (``nemo_rl``) when it is importable;
3. else the fallback when the config has a ``fallback:`` section with ``enabled``
   not ``false`` (the ``tiny`` config has one);
4. else a message saying nemo_rl is missing, exit code 3.

The fallback (nemotron.training) is a CPU smoke fallback, NOT RL: a tiny GPT warm-started with teacher forcing on
prompt -> answer from the RL data prep's JSONL, reporting greedy-decoding accuracy
on the validation split.
It resumes from ``checkpoint.save`` and ends with a ``final loss ...`` line.
See docs/training.md.
"""

from __future__ import annotations

import sys
from typing import Any

BACKEND = "nemo_rl"


def main(argv: list[str] | None = None) -> int:
    """Load the config, choose the backend and train; returns the process exit code."""
    from nemotron.training.entry import main as entry_main

    return entry_main("rl", argv, description=__doc__.splitlines()[0], native_module=BACKEND,
                      script=__file__, native_run=_run)


def _run(container: dict[str, Any], extra: list[str]) -> int:
    """NeMo-RL GRPO with the resolved config (nemotron.training.nemo_rl)."""
    from nemotron.training.nemo_rl import run

    return run(container, extra)


if __name__ == "__main__":
    sys.exit(main())
