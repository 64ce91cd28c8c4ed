"""NeMo Evaluator: what the CLI sends to ``nemo-evaluator-launcher`` (docs/evaluation.md).

==========================  ================================================
module                      holds
==========================  ================================================
``evaluation.evaluator``    W&B injection, the evaluation config, ``eval.yaml``
``evaluation.tasks``        ``--task`` flags and the task selection
``evaluation.launcher``     is the launcher installed; its images + squash plans
==========================  ================================================

The reference's ``nemo_runspec.evaluator`` is ``evaluation.evaluator`` (the same module
object, ``nemo_runspec._compat``), which re-exports the other two modules' names.
"""
