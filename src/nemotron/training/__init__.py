"""CPU/GPU fallback runtime for the nano3 training recipes: a tiny GPT trained with plain PyTorch DDP.

Used by ``recipes/nano3/stage*/train.py`` when Megatron-Bridge / NeMo-RL are not
installed (or when the config asks for it); see ``docs/training.md``.

Modules: :mod:`.tiny_gpt` (model and losses), :mod:`.data` (readers for the
data-prep outputs), :mod:`.checkpoint` (atomic save / resume), :mod:`.loop`
(the DDP training loop) and :mod:`.entry` (backend choice and the script entry
point). Nothing here is imported by the CLI; torch is imported by the submodules.
"""
