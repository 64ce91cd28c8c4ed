# /// script
# requires-python = ">=3.11"
#
# [tool.runspec]
# schema = "1"
# name = "nano3/rl"
# image = "nvcr.io/nvidia/nemo-rl:v0.4.0"
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
# ///
"""nano3/rl: NeMo-RL GRPO training of Nemotron 3 Nano.

Run by the `nemotron` CLI as `python train.py --config <train.yaml> [args...]`.
Loads the YAML with OmegaConf and hands it to nemo_rl. Without nemo_rl
installed (e.g. on a CPU-only dev machine) it says so and exits 3.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

EXIT_BACKEND_MISSING = 3
BACKEND = "nemo_rl"


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
            f"nano3/rl: {BACKEND} is not installed here; run this recipe in its container "
            f"(nvcr.io/nvidia/nemo-rl:v0.4.0) or install {BACKEND}.",
            file=sys.stderr,
        )
        return EXIT_BACKEND_MISSING
    return _run(cfg, extra)


def _run(cfg, extra: list[str]) -> int:  # pragma: no cover - needs the GPU stack
    from nemo_rl.algorithms.grpo import MasterConfig, grpo_train, setup  # noqa: F401
    from omegaconf import OmegaConf

    container = OmegaConf.to_container(cfg, resolve=True)
    container.pop("run", None)
    grpo_train(*setup(container))
    return 0


if __name__ == "__main__":
    sys.exit(main())
