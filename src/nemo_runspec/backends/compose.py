"""Add a compiled recipe job to a caller's nemo-run ``Experiment`` instead of running it.

This is what ``execute(run, experiment=exp)`` of every recipe does: a pipeline,
a notebook or another tool builds its own ``nemo_run.Experiment``, adds recipe
tasks to it (with nemo-run's ``dependencies=`` between them) and runs it
itself (``exp.dryrun()``, ``exp.run()``). Nothing is run or submitted here.

- **Slurm** (a profile with ``executor = "slurm"``): the same
  :func:`~nemo_runspec.slurm.prepare_job` as ``--run``/``--batch`` builds the
  real nemo-run ``SlurmExecutor`` (packager, torchrun launcher or our Ray
  template) and the task (a ``Script``; the Ray driver for ``launch = "ray"``),
  added with ``experiment.add(task, executor=..., name=...)``. Nothing is
  written into the caller's experiment dir (nemo-run creates it when the
  experiment runs, and ``exp.dryrun()`` wants to create it itself): the job
  writes its ``job.yaml``/``train.yaml`` (redacted; read as
  ``/nemo_run/train.yaml``) into its own dir from its setup lines. Secrets go,
  as for ``--batch``, into a 0600 file the job sources and deletes; it is
  placed when the task is added, in a dir of its own next to the experiment
  (a note names it). A local tunnel is built under the experiment's own base
  dir, as nemo-run expects.
- **Local** (no profile, or ``executor = "local"``): a nemo-run
  ``LocalExecutor`` task running the command of a local run
  (:func:`~nemo_runspec.execution.local_command`, or with ``run.setup``/``run.cmd``
  the same launch files as a direct local run,
  :func:`~nemo_runspec.execution.local.local_launch_files`) in the task's dir, after
  writing the job files there and running the startup commands; secrets
  come from a 0600 file in a private temp dir, deleted when the task ends.

Not done here, because the caller runs the experiment: the submission ledger
(``nemotron jobs``), following the job, and importing a container image into
``squash_dir`` (a warning says to run ``nemotron kit squash PROFILE`` first).
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nemo_runspec.errors import ExecutionError

if TYPE_CHECKING:
    from nemo_runspec.job.compiled import CompiledJob


def add_to_experiment(job: CompiledJob, experiment: Any, *, name: str | None = None,
                      dependencies: list[str] | None = None) -> str | None:
    """Add ``job``'s task to ``experiment`` (a ``nemo_run.Experiment``); return its task id.

    ``name`` is the task name (default: the recipe's, ``nano3-pretrain``; made
    unique in the experiment with ``-2``, ``-3`` ...), ``dependencies`` task ids
    of the same experiment it waits for (nemo-run's ``afterok`` chain on Slurm).
    A dry run adds nothing: it shows the job (and the exact sbatch script) like
    ``--dry-run`` and returns None.
    """
    from nemo_runspec.env.registry import backend_class
    from nemo_runspec.job.settings import job_slug

    _check_experiment(experiment)
    task_name = _unique_name(experiment, job_slug(name or job.name))
    if job.is_local:
        if job.dry_run:
            from nemo_runspec.backends.dry_run import show_dry_run

            show_dry_run(job)
            return None
        return _add_local(job, experiment, task_name, dependencies)
    if not backend_class(job.executor).composes:
        raise ExecutionError(
            f"executor = {job.executor!r} jobs are not added to a caller's Experiment by this version",
            key="executor", hint="run them with execute(run) (or --run/--batch); compose Slurm or local jobs")
    return _add_slurm(job, experiment, task_name, dependencies)


def composing(experiment: Any, dependencies: list[str] | None) -> bool:
    """Whether an ``execute(run, experiment=, dependencies=)`` call adds its task to a caller's
    experiment; ``dependencies`` without one is an error (they are task ids of that experiment)."""
    if experiment is None and dependencies:
        raise ExecutionError("dependencies= names tasks of an experiment, but no experiment= was given",
                             key="dependencies", hint="pass experiment=exp with the task ids exp.add returned, "
                             "or drop dependencies= (a job on its own waits for nothing)")
    return experiment is not None


def _check_experiment(experiment: Any) -> None:
    missing = [a for a in ("add", "_id", "_title", "_exp_dir", "jobs") if not hasattr(experiment, a)]
    if missing:
        raise ExecutionError(
            f"experiment= must be a nemo_run.Experiment, got {type(experiment).__name__}",
            hint="with nemo_run.Experiment('my-pipeline') as exp: execute(run, experiment=exp); exp.run()")


def _unique_name(experiment: Any, name: str) -> str:
    """``name``, or ``name-N`` when the experiment has a task (or task dir) of that name:
    nemo-run gives two tasks added under one name the same directory."""
    taken = {getattr(j, "id", None) for j in experiment.jobs}
    candidate, n = name, 1
    while candidate in taken or (Path(experiment._exp_dir) / candidate).exists():
        n += 1
        candidate = f"{name}-{n}"
    return candidate


def _experiment_base(experiment: Any) -> Path:
    """The base dir of ``experiment``: its dir is ``<base>/experiments/<title>/<id>``."""
    exp_dir = Path(experiment._exp_dir)
    if exp_dir.parent.name != experiment._title or exp_dir.parents[1].name != "experiments":
        raise ExecutionError(f"unexpected nemo-run experiment dir {exp_dir}",
                             hint="expected <base_dir>/experiments/<title>/<id>")
    return exp_dir.parents[2]


def _add_slurm(job: CompiledJob, experiment: Any, task_name: str,
               dependencies: list[str] | None) -> str | None:
    from nemo_runspec import slurm
    from nemo_runspec.job.packager import packager_for
    from nemo_runspec.slurm.remote import place_secrets
    from nemo_runspec.slurm.render import task_for

    base = _experiment_base(experiment)
    prepared = slurm.prepare_job(job, *packager_for(job), name=task_name, base_dir=base)
    if job.dry_run:
        from nemo_runspec.backends.dry_run import show_dry_run

        show_dry_run(job, prepared)
        return None
    # The task's job dir in the caller's experiment (as the cluster sees it): the
    # job writes its job.yaml/train.yaml there itself, before its srun step.
    in_experiment = dataclasses.replace(prepared, title=experiment._title, exp_id=experiment._id)
    executor = prepared.executor
    executor.setup_lines = "\n".join(
        x for x in (executor.setup_lines or "", write_files_lines(in_experiment.job_dir, prepared.files)) if x)
    if prepared.is_ray:  # Slurm opens the --output file before the script runs: the job dir exists
        executor.job_details.folder = in_experiment.job_dir
    if prepared.squash is not None:
        print(f"warning: {job.name}: the job runs the squashed image {prepared.squash.path}; "
              f"import it first (nemotron kit squash {job.profile.name if job.profile else 'PROFILE'}), "
              "the experiment does not", file=sys.stderr)
    task_id = experiment.add(task_for(prepared), executor=executor, name=task_name,
                             dependencies=list(dependencies or []) or None)
    if prepared.secrets:
        # Outside the caller's experiment dir (nemo-run creates that one itself); the
        # job sources and deletes it when it starts.
        place_secrets(prepared)
        print(f"note: {task_name}: its secrets wait in {prepared.secret_path} (mode 0600) until the "
              "job starts and deletes them; remove that file if the experiment never runs",
              file=sys.stderr)
    return task_id


def write_files_lines(job_dir: str, files: dict[str, str]) -> str:
    """Shell lines writing ``files`` (name -> text, already redacted) into ``job_dir``."""
    lines = [f"mkdir -p {shlex.quote(job_dir)}"]
    for name, text in files.items():
        end = "NEMOTRON_JOB_FILE"
        while end in text:
            end += "_"
        body = text if text.endswith("\n") else text + "\n"
        lines.append(f"cat > {shlex.quote(os.path.join(job_dir, name))} <<'{end}'\n{body}{end}")
    return "\n".join(lines)


def _add_local(job: CompiledJob, experiment: Any, task_name: str,
               dependencies: list[str] | None) -> str:
    import tempfile

    from nemo_runspec._nemo_run import lean
    from nemo_runspec.execution.local import local_command, local_launch_files, local_nproc
    from nemo_runspec.execution.runspec_cmd import LAUNCH_FILE
    from nemo_runspec.execution.secret_file import (
        SECRET_FILE_NAME,
        source_snippet,
        write_secret_file,
    )
    from nemo_runspec.secrets import is_secret_env, marked_names

    lean()
    from nemo_run.config import Script
    from nemo_run.core.execution.local import LocalExecutor

    job_dir = os.path.join(experiment._exp_dir, task_name)  # nemo-run's dir of a task added under a name
    from nemo_runspec.dollar import expand_all
    from nemo_runspec.execution.env_vars import runspec_env

    # a local task has no shell in between: expanded here as the job's shell would (nemo_runspec.dollar)
    env: dict[str, str] = expand_all({**runspec_env(job.runspec), **{str(k): str(v) for k, v in
                                                                    (job.run_env.get("env_vars") or {}).items()}},
                                     os.environ)
    if job.env_file is not None:
        env["NEMOTRON_ENV_FILE"] = str(job.env_file.path)
    env["NEMOTRON_JOB_DIR"] = job_dir
    marked = marked_names(job.run_env)  # the profile's secret_env_vars / public_env_vars
    secrets = {k: v for k, v in env.items() if is_secret_env(k, marked, v)}
    plain = {k: v for k, v in env.items() if k not in secrets}
    nproc = local_nproc(job.run_env, job.launch)
    # run.setup / run.cmd: the same launch files as a direct local run (docs/runspec/v1/spec.md §7)
    launch_files = local_launch_files(job.runspec, job_dir, job.passthrough, launch=job.launch, nproc=nproc)
    if launch_files:
        command = ["bash", os.path.join(job_dir, LAUNCH_FILE)]
    else:
        command = local_command(str(job.runspec.script_path), os.path.join(job_dir, "train.yaml"),
                                job.passthrough, launch=job.launch, nproc=nproc)
    lines = ["set -e", write_files_lines(job_dir, {**job.files(), **launch_files}), f"cd {shlex.quote(job_dir)}"]
    if secrets:  # a 0600 file in a private dir, sourced and deleted by the task
        secret_file = Path(tempfile.mkdtemp(prefix="nemotron-secrets-")) / SECRET_FILE_NAME
        write_secret_file(secret_file, secrets)
        lines.append(source_snippet(str(secret_file)))
    lines += [str(c) for c in job.run_env.get("startup_commands") or []]
    if launch_files:  # `python` in setup/run.cmd is this interpreter, as in a direct local run
        lines.append(f"export PATH={shlex.quote(os.path.dirname(sys.executable))}:\"$PATH\"")
    lines.append(shlex.join(command))  # not exec: the EXIT trap removes the secrets file
    task = Script(inline="\n".join(lines) + "\n", entrypoint="bash")
    return experiment.add(task, executor=LocalExecutor(env_vars=plain), name=task_name,
                          dependencies=list(dependencies or []) or None)
