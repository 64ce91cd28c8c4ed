"""Sweeps: one command, many runs (``-m/--multirun``; docs/sweeps.md).

=======================  ==========================================================
module                   holds
=======================  ==========================================================
``config.sweep``         the command line expanded into points (grammar: ``config.sweep_grammar``)
``sweep.collect``        while a sweep compiles a point, the recipe command's last step is
                         taken instead of run (the hook, ``job.last_step``, imports nothing)
``sweep.points``         every point's ``job.yaml``/``train.yaml``, derived from one compiled job
``sweep.array``          one ``sbatch --array`` job for the points of one allocation shape
``sweep.record``         ``$NEMOTRON_HOME/sweeps/<id>.json``: points, arrays, what completed
``sweep.states``         per-point state of a sweep from one ``sacct`` per cluster
``sweep.local``          points run here, one after another or ``--parallel N`` at once
``sweep.driver``         what ``-m`` does for a recipe command
=======================  ==========================================================

Nothing is imported here.
"""
