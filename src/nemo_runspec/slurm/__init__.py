"""Slurm through nemo-run: prepare, render, submit and follow one job.

Typical use from a recipe command (see ``docs/dev/architecture.md``)::

    packager, plan = packager_for(job)             # nemo_runspec.job.packager
    slurm_job = prepare_job(job, packager, plan)   # nemo-run SlurmExecutor + job dir layout
    if job.dry_run:
        print(render_sbatch(slurm_job))            # the exact script, offline
    else:
        submitted = submit(slurm_job, attached=job.attached)

=====================  ====================================================
module                 holds
=====================  ====================================================
``slurm.prepared``     :class:`PreparedJob`, :class:`SubmittedJob`, :func:`prepare_job`
``slurm.render``       :func:`render_sbatch` (offline, byte-identical to submission)
``slurm.submission``   :func:`submit`, :func:`submit_detached`
``slurm.launch``       :class:`~.launch.SlurmLaunch`: nemo-run's Experiment steps for one task, lean
``slurm.monitor``      :func:`follow`: queue state, live log, exit code
``slurm.queue``        ``squeue``/``sacct`` parsing
``slurm.remote``       commands and files where the job runs (local or SSH)
``slurm.summary``      what the user is shown after submission
``slurm.ledger``       the submission ledger: :func:`~.ledger.record_submission`, :func:`~.ledger.find`
``slurm.jobs``         recorded jobs asked about again (``nemotron jobs``): states, logs, cancel
=====================  ====================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nemo_runspec._lazy import lazy_exports

if TYPE_CHECKING:
    from nemo_runspec.execution.tunnels import default_base_dir
    from nemo_runspec.slurm.monitor import follow
    from nemo_runspec.slurm.prepared import PreparedJob, SubmittedJob, prepare_job
    from nemo_runspec.slurm.queue import (
        TERMINAL_STATES,
        exit_code_from_sacct,
        sacct_info,
        squeue_start,
        squeue_state,
    )
    from nemo_runspec.slurm.remote import Remote
    from nemo_runspec.slurm.render import render_sbatch
    from nemo_runspec.slurm.submission import submit, submit_detached
    from nemo_runspec.slurm.summary import follow_commands, print_submission

__all__ = [
    "PreparedJob",
    "Remote",
    "SubmittedJob",
    "TERMINAL_STATES",
    "default_base_dir",
    "exit_code_from_sacct",
    "follow",
    "follow_commands",
    "prepare_job",
    "print_submission",
    "render_sbatch",
    "sacct_info",
    "squeue_start",
    "squeue_state",
    "submit",
    "submit_detached",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "monitor": ["follow"],
    "prepared": ["PreparedJob", "SubmittedJob", "prepare_job"],
    "queue": ["TERMINAL_STATES", "exit_code_from_sacct", "sacct_info", "squeue_start", "squeue_state"],
    "remote": ["Remote"],
    "render": ["render_sbatch"],
    "submission": ["submit", "submit_detached"],
    "summary": ["follow_commands", "print_submission"],
    "nemo_runspec.execution.tunnels": ["default_base_dir"],
})
