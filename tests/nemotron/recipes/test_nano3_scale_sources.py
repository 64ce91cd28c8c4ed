"""The nano3 scale matrices say what their cited sources say (docs/sweeps.md, "The nano3 matrices").

SOURCES holds the numbers as read in each cited file at its tag (the git blob id pins
the exact file: ``git -C Megatron-Bridge rev-parse v0.6.0:PATH`` gives it), transcribed
by hand from the source, not from our runspecs. Every full-size cell must name one of
them in its ``note`` and agree with it: GPUs per cell, parallelism, micro batch.
"""

from __future__ import annotations

import pytest

from nemo_runspec import parse

MB = "Megatron-Bridge v0.6.0 "
SOURCES = {
    # blob d3c23879f7a0b1d084d310f41a1d30f4c9f4b0b7: _nemotron_3_nano_finetune_model() and the
    # pretrain config both set TP1 PP1 EP8 SP False; pretrain sets train.micro_batch_size = 1,
    # the SFT config keeps _sft_common's micro_batch_size=1 (recipes/common.py)
    MB + "recipes/nemotronh/h100/nemotron_3_nano.py nemotron_3_nano_pretrain_8gpu_h100_bf16_config": dict(
        gpus=8, tp=1, pp=1, ep=8, sp=False, mbs=1),
    MB + "recipes/nemotronh/h100/nemotron_3_nano.py nemotron_3_nano_sft_8gpu_h100_bf16_config": dict(
        gpus=8, tp=1, pp=1, ep=8, sp=False, mbs=1),
    # blob 78283e737b3b78c28f7999ba2e16cba862cf591a: TP1 PP1 EP8 SP False, micro batch 2, 8 GPUs
    MB + "recipes/nemotronh/gb200/nemotron_3_nano.py nemotron_3_nano_pretrain_8gpu_gb200_bf16_config": dict(
        gpus=8, tp=1, pp=1, ep=8, sp=False, mbs=2),
    # blob a4aa8d9ef9c3f3315e98b41b7be26f90b730f213: #SBATCH --nodes=4 --gpus-per-node=8,
    # MICRO_BATCH_SIZE=1, PARALLELISM_CONFIGS[0] = "4,1,8,1,True" (TP,PP,EP,CP,SP)
    MB + "examples/models/nemotron/nemotron_3/nano/slurm_pretrain.sh (its first parallelism config)": dict(
        nodes=4, gpus_per_node=8, tp=4, pp=1, ep=8, sp=True, mbs=1),
    # not a source: our 2-node cell, the 4-node script's settings (TP4 x EP8 divide 16 GPUs); its
    # note must say it is derived, and its numbers must stay those of the script it is derived from
    "derived, not run by a source: slurm_pretrain.sh's 4-node settings on 2 nodes": dict(
        nodes=2, gpus_per_node=8, tp=4, pp=1, ep=8, sp=True, mbs=1),
    # blob b818fdc40ce14659f218f55ddf4569a0617a1645: #SBATCH --nodes=2 --gpus-per-node=8, the same
    MB + "examples/models/nemotron/nemotron_3/nano/slurm_sft.sh (its first parallelism config)": dict(
        nodes=2, gpus_per_node=8, tp=4, pp=1, ep=8, sp=True, mbs=1),
    # NeMo-RL blob 0faef86919dc3522c2f3f1d814e4e58ddc1ef8a8: cluster: {gpus_per_node: 8, num_nodes: 2}
    "NeMo-RL v0.7.0 examples/configs/recipes/llm/grpo-nanov3-30BA3B-2n8g-megatron_generation.yaml": dict(
        nodes=2, gpus_per_node=8, cluster=True),
}
MODEL = {"tp": "model.tensor_model_parallel_size", "pp": "model.pipeline_model_parallel_size",
         "ep": "model.expert_model_parallel_size", "sp": "model.sequence_parallel", "mbs": "train.micro_batch_size"}


def _full_size_entries():
    from nemotron.recipes import RECIPES_DIR

    for script in ("stage0_pretrain/train.py", "stage1_sft/train.py", "stage2_rl/train.py"):
        for entry in parse(RECIPES_DIR / "nano3" / script).scales:
            if entry.gpu_types != ("cpu",):
                yield script, entry


@pytest.mark.parametrize(("script", "entry"), list(_full_size_entries()),
                         ids=lambda x: x if isinstance(x, str) else f"scales[{x.index}]")
def test_each_full_size_cell_agrees_with_its_cited_source(script, entry):
    assert entry.note in SOURCES, f"{script} scales[{entry.index}] cites {entry.note!r}, not a pinned source"
    src = SOURCES[entry.note]
    assert entry.precisions == ("bf16",)  # every cited source is bf16 (fp8 settings commented out)
    if "gpus" in src:  # one recipe function: its GPU count, on nodes of the entry's size
        assert all(n * entry.gpus_per_node == src["gpus"] for n in entry.nodes)
    else:  # a Slurm script or a NeMo-RL recipe: its nodes and GPUs per node
        assert entry.nodes == (src["nodes"],) and entry.gpus_per_node == src["gpus_per_node"]
    if src.get("cluster"):  # NeMo-RL sizes its cluster from the config
        assert dict(entry.overrides) == {"cluster.num_nodes": src["nodes"], "cluster.gpus_per_node": src["gpus_per_node"]}
        return
    assert dict(entry.overrides) == {MODEL[k]: src[k] for k in MODEL}


def test_every_cited_source_is_used():
    assert {e.note for _, e in _full_size_entries()} == set(SOURCES)
