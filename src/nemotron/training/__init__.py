"""CPU/GPU fallback runtime for the nano3 training recipes: a tiny GPT trained with plain PyTorch DDP.

Used by ``recipes/nano3/stage*/train.py`` when Megatron-Bridge / NeMo-RL are not
installed (or when the config asks for it); see ``docs/training.md``.

Modules: :mod:`.tiny_gpt` (model and losses), :mod:`.data` (readers for the
data-prep outputs), :mod:`.checkpoint` (atomic save / resume), :mod:`.loop`
(the DDP training loop) and :mod:`.entry` (backend choice and the script entry
point); and what the native backends are called with in each image: :mod:`.versions`
(the compatibility table), :mod:`.bridge_lines` and :mod:`.rl_lines` (per release
line), :mod:`.version_check` (the job's first check). The CLI imports only
:mod:`.native_plan` (and through it the table and lines) for its dry runs; torch
is imported by the submodules.
"""
