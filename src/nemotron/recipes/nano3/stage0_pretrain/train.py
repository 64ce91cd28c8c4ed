# /// script
# requires-python = ">=3.11"
#
# [tool.runspec]
# schema = "1"
# name = "nano3/pretrain"
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
#
# # Scale matrix (docs/runspec/v1/spec.md section 8; sources: docs/sweeps.md, "The nano3 matrices").
# # Full-size config: Megatron-Bridge v0.6.0's own recipes, recipes/nemotronh/h100/nemotron_3_nano.py
# # (one 8-GPU H100 node: TP1 PP1 EP8, micro batch 1, bf16) and gb200/nemotron_3_nano.py (8 GB200
# # GPUs = 2 nodes of 4: TP1 PP1 EP8, micro batch 2, bf16); several nodes: its
# # examples/models/nemotron/nemotron_3/nano/slurm_pretrain.sh (4 nodes x 8 GPUs, its first
# # parallelism config TP4 PP1 EP8 SP, micro batch 1). No source runs 2 nodes: that cell is ours,
# # the 4-node settings on 16 GPUs (TP4 x EP8 divide them), and its note says so.
# # tests/nemotron/recipes/test_nano3_scale_sources.py pins these numbers to the cited files.
# [[tool.runspec.scales]]
# configs = ["default"]
# gpu_types = ["h100"]
# nodes = [1]
# precisions = ["bf16"]
# gpus_per_node = 8
# note = "Megatron-Bridge v0.6.0 recipes/nemotronh/h100/nemotron_3_nano.py nemotron_3_nano_pretrain_8gpu_h100_bf16_config"
# overrides = { "model.tensor_model_parallel_size" = 1, "model.pipeline_model_parallel_size" = 1, "model.expert_model_parallel_size" = 8, "model.sequence_parallel" = false, "train.micro_batch_size" = 1 }
#
# [[tool.runspec.scales]]
# configs = ["default"]
# gpu_types = ["h100"]
# nodes = [4]
# precisions = ["bf16"]
# gpus_per_node = 8
# note = "Megatron-Bridge v0.6.0 examples/models/nemotron/nemotron_3/nano/slurm_pretrain.sh (its first parallelism config)"
# overrides = { "model.tensor_model_parallel_size" = 4, "model.pipeline_model_parallel_size" = 1, "model.expert_model_parallel_size" = 8, "model.sequence_parallel" = true, "train.micro_batch_size" = 1 }
#
# [[tool.runspec.scales]]
# configs = ["default"]
# gpu_types = ["h100"]
# nodes = [2]
# precisions = ["bf16"]
# gpus_per_node = 8
# note = "derived, not run by a source: slurm_pretrain.sh's 4-node settings on 2 nodes"
# overrides = { "model.tensor_model_parallel_size" = 4, "model.pipeline_model_parallel_size" = 1, "model.expert_model_parallel_size" = 8, "model.sequence_parallel" = true, "train.micro_batch_size" = 1 }
#
# [[tool.runspec.scales]]
# configs = ["default"]
# gpu_types = ["gb200"]
# nodes = [2]
# precisions = ["bf16"]
# gpus_per_node = 4
# note = "Megatron-Bridge v0.6.0 recipes/nemotronh/gb200/nemotron_3_nano.py nemotron_3_nano_pretrain_8gpu_gb200_bf16_config"
# overrides = { "model.tensor_model_parallel_size" = 1, "model.pipeline_model_parallel_size" = 1, "model.expert_model_parallel_size" = 8, "model.sequence_parallel" = false, "train.micro_batch_size" = 2 }
#
# # The tiny config: the CPU fallback trainer (fp32), on CPU nodes (gpus_per_node = 0), one node or
# # a power of two of them (its DDP runs across nodes).
# [[tool.runspec.scales]]
# configs = ["tiny"]
# gpu_types = ["cpu"]
# nodes = [1, 2]
# exact = false
# precisions = ["fp32"]
# note = "the CPU fallback trainer (docs/training.md), tested on the local two-node cluster"
# ///
"""nano3/pretrain: Megatron-Bridge pretraining of Nemotron 3 Nano.

Run by the `nemotron` CLI as `python train.py --config <train.yaml> [key=value ...]`
(or under torchrun). The YAML is the recipe config after overrides; extra
``key=value`` arguments are applied as further overrides.

Backend choice:

1. ``backend: torch`` or ``fallback.enabled: true`` -> the tiny torch fallback;
2. else Megatron-Bridge (``megatron.bridge``) when it is importable;
3. else the fallback when the config has a ``fallback:`` section with ``enabled``
   not ``false`` (the ``tiny`` config has one);
4. else a message saying megatron.bridge is missing, exit code 3.

The fallback (nemotron.training) is a tiny GPT trained with plain PyTorch DDP as a next-token LM on fixed-length
windows of the pretrain data prep's indexed datasets (blend.json weights respected).
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

    return entry_main("pretrain", argv, description=__doc__.splitlines()[0], native_module=BACKEND,
                      script=__file__, native_run=_run)


def _run(container: dict[str, Any], extra: list[str]) -> int:
    """Megatron-Bridge pretrain with the resolved config (nemotron.training.megatron_bridge)."""
    from nemotron.training.megatron_bridge import run

    return run("pretrain", container)


if __name__ == "__main__":
    sys.exit(main())
