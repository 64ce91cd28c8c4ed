"""Pipelines: recipe stages run in order, each consuming what the previous ones published.

===============================  ===============================================
module                           holds
===============================  ===============================================
``pipeline.step``                :class:`Step`: a stage's script, config, artifacts
``pipeline.stage_selection``     which stages ``--stages`` names
``pipeline.chain``               compile the stages, skip what is made, run here or
                                 submit as an afterok chain, follow, cancel
``pipeline.records``             :class:`StagePlan`, :class:`PipeSubmission`,
                                 ``$NEMOTRON_HOME/pipes/<id>.json``
``pipeline.sbatch``              every stage in one Slurm allocation
===============================  ===============================================

This package was the module ``pipeline.py`` before issue 31 and exports its public
names, loaded on first use (``from nemo_runspec.pipeline import compile_pipeline``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nemo_runspec._lazy import lazy_exports

if TYPE_CHECKING:
    from nemo_runspec.pipeline.chain import (
        before_submit,
        cancel_jobs,
        compile_pipeline,
        follow_submission,
        graph_lines,
        made_by,
        new_pipe_id,
        pipe_key,
        prepare_stage,
        prepare_stages,
        run_local,
        split_stage_overrides,
        stage_env,
        submit_slurm,
    )
    from nemo_runspec.pipeline.records import (
        PipeSubmission,
        StagePlan,
        chain_record,
        load_record,
        pipes_dir,
        write_record,
    )
    from nemo_runspec.pipeline.stage_selection import select_stages
    from nemo_runspec.pipeline.step import (
        Preparation,
        Step,
        artifact_name,
        consumed_artifacts,
        published_artifact,
    )

__all__ = [
    "PipeSubmission", "Preparation", "StagePlan", "Step", "artifact_name", "before_submit", "cancel_jobs",
    "chain_record", "compile_pipeline", "consumed_artifacts", "follow_submission", "graph_lines",
    "load_record", "made_by", "new_pipe_id", "pipe_key", "pipes_dir", "prepare_stage", "prepare_stages",
    "published_artifact", "run_local", "select_stages", "split_stage_overrides", "stage_env",
    "submit_slurm", "write_record",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "chain": ("before_submit", "cancel_jobs", "compile_pipeline", "follow_submission", "graph_lines",
              "made_by", "new_pipe_id", "pipe_key", "prepare_stage", "prepare_stages", "run_local",
              "split_stage_overrides", "stage_env", "submit_slurm"),
    "records": ("PipeSubmission", "StagePlan", "chain_record", "load_record", "pipes_dir", "write_record"),
    "stage_selection": ("select_stages",),
    "step": ("Preparation", "Step", "artifact_name", "consumed_artifacts", "published_artifact"),
})
