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

Run by the `nemotron` CLI as `python train.py --config <train.yaml> [args...]`.
Loads the YAML with OmegaConf and hands it to megatron.bridge. Without megatron.bridge
installed (e.g. on a CPU-only dev machine) it says so and exits 3.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

EXIT_BACKEND_MISSING = 3
BACKEND = "megatron.bridge"


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    """``--config PATH`` plus any extra arguments (returned untouched)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="train config YAML written by the CLI")
    return parser.parse_known_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Load the config and run training; returns the process exit code."""
    args, extra = parse_args(argv)
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(args.config)
    if importlib.util.find_spec(BACKEND.split(".")[0]) is None or importlib.util.find_spec(BACKEND) is None:
        print(
            f"nano3/sft: {BACKEND} is not installed here; run this recipe in its container "
            f"(nvcr.io/nvidia/nemo:25.11.nemotron_3_nano) or install {BACKEND}.",
            file=sys.stderr,
        )
        return EXIT_BACKEND_MISSING
    return _run(cfg, extra)


def _run(cfg, extra: list[str]) -> int:  # pragma: no cover - needs the GPU stack
    from megatron.bridge.training.config import ConfigContainer  # noqa: F401
    from megatron.bridge.training.finetune import finetune as pretrain
    from megatron.bridge.training.gpt_step import forward_step
    from omegaconf import OmegaConf

    container = OmegaConf.to_container(cfg, resolve=True)
    container.pop("run", None)
    pretrain(ConfigContainer.from_dict(container), forward_step_func=forward_step)
    return 0


if __name__ == "__main__":
    sys.exit(main())
