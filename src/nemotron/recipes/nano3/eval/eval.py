# /// script
# requires-python = ">=3.11"
#
# [tool.runspec]
# schema = "1"
# name = "nano3/eval"
# image = "nvcr.io/nvidia/nemo:25.11.nemotron_3_nano"
#
# [tool.runspec.run]
# launch = "direct"
#
# [tool.runspec.config]
# dir = "./config"
# default = "default"
#
# [tool.runspec.resources]
# nodes = 1
# gpus_per_node = 0
# ///
"""nano3/eval: evaluate a model artifact with NeMo Evaluator, or the tiny CPU models with the fallback.

Run by the `nemotron` CLI as `python eval.py --config <train.yaml> [key=value ...]
[--task NAME ...]` (one process: the job itself needs no GPU; NeMo Evaluator's
launcher starts the model server and the benchmark containers where the
config's `execution` says).

Backend choice (nemo_runspec.evaluator.evaluation_backend):

1. ``backend: torch`` or ``fallback.enabled: true`` (the ``tiny`` config) -> the
   CPU fallback: held-out perplexity on the pretrain data's test split and
   exact-match accuracy of greedy answers on the RL data's validation split, for
   the tiny GPT checkpoints of the CPU chain;
2. else NeMo Evaluator (``nemo_evaluator_launcher``) when it imports here: the
   config minus our keys, over the launcher's packaged defaults, is written to
   ``<job dir>/eval.yaml`` and handed to the launcher;
3. else (``fallback.enabled: auto``) the fallback, or a message and exit code 3.

Results: ``<job dir>/results.json``, published as ``publish.name``; the last line
is ``eval: <metric>=<value> ...``. See docs/evaluation.md.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Load the config, choose the backend and evaluate; returns the process exit code."""
    from nemotron.training.eval_entry import main as eval_main

    return eval_main(argv, script=__file__)


if __name__ == "__main__":
    sys.exit(main())
