# /// script
# requires-python = ">=3.11"
#
# [tool.runspec]
# schema = "1"
# name = "nano3/convert"
# image = "nvcr.io/nvidia/nemo:25.11.nemotron_3_nano"
#
# [tool.runspec.run]
# launch = "direct"
#
# [tool.runspec.config]
# dir = "./config/convert"
# default = "default"
#
# [tool.runspec.resources]
# nodes = 1
# gpus_per_node = 1
# ///
"""nano3/convert: export the SFT checkpoint (Megatron) to Hugging Face for NeMo-RL, with Megatron-Bridge.

Run by the `nemotron` CLI as `python convert.py --config <train.yaml> [key=value ...]`
(one process: Megatron-Bridge's export loads the checkpoint on CPU; one GPU is
requested so the image's CUDA libraries load). The YAML names the SFT model
(``convert.megatron_path``, ``${art:model,path}``), the Hugging Face model it was
trained from (``convert.hf_model``) and the output dir (``checkpoint.save``), which is
published as ``publish.name`` (format ``hf``) for ``nano3 rl``.

First the installed Megatron-Bridge is checked against the compatibility table and the
input's format against ``megatron-dist`` (one line and exit 2 when either is wrong).
When ``convert.input_format`` equals ``convert.output_format`` (the CPU fallback chain)
there is nothing to convert: that line, then the outcome line, exit 0. See docs/training.md.
"""

from __future__ import annotations

import sys
from typing import Any

BACKEND = "megatron.bridge"


def main(argv: list[str] | None = None) -> int:
    """Load the config, check versions and formats, export; returns the process exit code."""
    from nemotron.training.entry import main as entry_main

    return entry_main("convert", argv, description=__doc__.splitlines()[0], native_module=BACKEND,
                      script=__file__, native_run=_run, nothing_to_do=_nothing_to_do)


def _nothing_to_do(cfg: Any) -> str | None:
    """The line that says the formats already match (the stage then ends with 0), or None."""
    from nemotron.training.convert import nothing_to_convert

    why = nothing_to_convert(cfg)
    return f"nano3/convert: nothing to convert: {why}" if why else None


def _run(container: dict[str, Any], extra: list[str]) -> int:
    """Megatron-Bridge's Megatron -> Hugging Face export (nemotron.training.convert)."""
    from nemotron.training.convert import run

    return run(container)


if __name__ == "__main__":
    sys.exit(main())
