"""CPU data preparation for the nano3 recipes (pretrain, SFT, RL), fanned out as Ray tasks.

Importing this package is cheap: Ray, pyarrow and ``tokenizers`` are imported only
inside the functions that need them. Entry points:

- :func:`nemotron.data_prep.pretrain.run_pretrain` -> Megatron ``.bin``/``.idx`` + ``blend.json``
- :func:`nemotron.data_prep.sft.run_sft` -> packed Parquet sequences with loss masks
- :func:`nemotron.data_prep.rl.run_rl` -> NeMo-RL JSONL train/validation splits
- :func:`nemotron.data_prep.cli.main` -> shared ``--config`` command line used by the recipe scripts
"""

__all__ = ["__doc__"]
