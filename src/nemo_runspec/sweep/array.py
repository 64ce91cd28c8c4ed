"""One ``sbatch --array`` job for the points of a sweep that share an allocation shape.

The representative's :class:`~nemo_runspec.slurm.prepared.PreparedJob` (what its
recipe command would have submitted) becomes an array job (:class:`ArrayJob`):

- ``#SBATCH --array=<indices>[%K]``: the sweep's point numbers, so array task
  ``N`` is point ``N`` (``--parallel K`` caps how many run at once);
- each point has its own dir in the job dir, ``points/<N>/``, with its
  ``train.yaml`` (:mod:`nemo_runspec.sweep.points`; ``run.sweep`` says which point),
  ``point.json`` (its overrides and swept values), its logs (``log-<job>_<array id>_<restart>.out``, the batch
  script's ``sbatch_<job>_<array id>.out``) and, with secrets, its own 0600
  secrets file (a task deletes its file when it ends, as a single job does);
- the script reads ``--config <job dir>/points/$SLURM_ARRAY_TASK_ID/train.yaml``
  and exports ``NEMOTRON_JOB_DIR`` (where a recipe writes its outputs) and
  ``NEMOTRON_SWEEP_ID``/``_INDEX``/``_VALUES`` (what an artifact it publishes
  records: :mod:`nemo_runspec.artifacts.registry`);
- a Ray job's cluster files and logs go to a dir of their own per task
  (``templates/ray_slurm.sub.j2``), since array tasks may run at once;
- a recipe with ``run.setup``/``run.cmd`` (or ``run.profile.nsys``) starts through a
  launch script each task writes into its point's dir, reading that point's config
  (:mod:`nemo_runspec.slurm.launch_script`);
- with ``[resilience]`` every task keeps its attempt records, heartbeats and helper in
  ``points/<N>/resilience/`` and requeues only itself (``ARRAY_TASK``, never the
  array's id, which Slurm reads as every task); nemo-run's own ``retries`` would requeue
  by ``$SLURM_JOB_ID`` and is refused.

The code is packaged once, for all points. Everything is rendered by nemo-run as
for a single job, so :func:`~nemo_runspec.slurm.render_sbatch` of the array job
is its exact script (the dry run shows it once).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

from nemo_runspec.errors import ConfigError
from nemo_runspec.slurm.prepared import TRAIN_YAML, PreparedJob
from nemo_runspec.sweep.points import PointJob

if TYPE_CHECKING:
    from nemo_runspec.slurm.launch_script import LaunchScript

#: The array task's index, as the batch script (and every srun step) sees it.
TASK = "${SLURM_ARRAY_TASK_ID}"
POINTS = "points"


@dataclass
class ArrayJob(PreparedJob):
    """A :class:`PreparedJob` that runs as a Slurm array, one task per point."""

    durable_files = False

    indices: tuple[int, ...] = ()
    array: str = ""
    sweep_id: str = ""
    #: ``{index: {key: value}}`` of the points this array runs
    point_values: dict[int, dict[str, str]] = field(default_factory=dict)

    def secret_paths(self) -> list[str]:
        """One secrets file per point (each task sources and deletes its own)."""
        if not self.secrets:
            return []
        from nemo_runspec.execution.secret_file import SECRET_FILE_NAME

        return [os.path.join(self.point_dir(i), SECRET_FILE_NAME) for i in self.indices]

    def point_dir(self, index: int | str) -> str:
        """Point ``index``'s dir, as the cluster sees it."""
        return os.path.join(self.job_dir, POINTS, str(index))

    def log_path(self, index: int, array_id: str) -> str:
        """The log of point ``index`` of array ``array_id`` (a Ray job's is its batch log)."""
        if self.is_ray:
            return self.sbatch_log_path(index, array_id)
        return os.path.join(self.point_dir(index), f"log-{self.job_name}_{array_id}_0.out")

    def sbatch_log_path(self, index: int, array_id: str) -> str:
        """The batch script's log of point ``index``."""
        return os.path.join(self.point_dir(index), f"sbatch_{self.job_name}_{array_id}.out")


def array_spec(indices: Sequence[int], parallel: int | None = None) -> str:
    """``0-3``, ``1,3,5-7``, with ``%K`` when at most K may run at once."""
    runs: list[str] = []
    ordered = sorted(set(indices))
    start = prev = ordered[0]
    for i in [*ordered[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ",".join(runs) + (f"%{parallel}" if parallel else "")


_DETAILS: type | None = None


def _details_class() -> type:
    """nemo-run's ``SlurmJobDetails`` with each task's logs in its point's dir."""
    global _DETAILS
    if _DETAILS is None:
        from nemo_runspec._nemo_run import lean

        lean()
        from pathlib import Path

        from nemo_run.core.execution.slurm import SlurmJobDetails

        @dataclass(kw_only=True)
        class ArrayJobDetails(SlurmJobDetails):
            """Logs of an array task in ``<points dir>/<task>/``: the batch script's with
            Slurm's ``%A``/``%a``, the step's with the shell's ``$SLURM_ARRAY_*``."""

            points_dir: str = ""

            def _sbatch(self, ext: str) -> Path:
                return Path(self.points_dir) / "%a" / f"sbatch_{self.job_name}_%A.{ext}"

            def _srun(self, ext: str) -> Path:
                return (Path(self.points_dir) / TASK /
                        f"log-{self.job_name}_${{SLURM_ARRAY_JOB_ID}}_${{SLURM_RESTART_COUNT:-0}}.{ext}")

            @property
            def stdout(self) -> Path:
                return self._sbatch("out")

            @property
            def stderr(self) -> Path:
                return self._sbatch("err")

            @property
            def srun_stdout(self) -> Path:
                return self._srun("out")

            @property
            def srun_stderr(self) -> Path:
                return self._srun("err")

        _DETAILS = ArrayJobDetails
    return _DETAILS


def refuse_unsupported(rep: PreparedJob) -> None:
    """What a sweep cannot run as one array: one line saying so."""
    if int(rep.values.get("retries") or 0) > 0:
        raise ConfigError("a sweep on Slurm cannot use the profile's retries: nemo-run requeues with "
                          "scontrol requeue $SLURM_JOB_ID, which for one task of an array is the whole array",
                          key="retries", hint="use [resilience] (max_restarts = N), which requeues each point "
                                              "on its own, or run.env.retries=0")


def _seen(rep: PreparedJob, path: str) -> str:
    """``path`` under the job dir as the job's processes see it (``/nemo_run`` in a container)."""
    if rep.executor.container_image:
        return "/nemo_run" + path[len(rep.job_dir):]
    return path


def build(rep: PreparedJob, points: Sequence[PointJob], *, sweep_id: str, parallel: int | None = None) -> ArrayJob:
    """The array job running ``points`` (each with its files) as ``rep`` would run one."""
    refuse_unsupported(rep)
    job = ArrayJob(**{f.name: getattr(rep, f.name) for f in fields(PreparedJob)})
    job.indices = tuple(p.point.index for p in points)
    job.array = array_spec(job.indices, parallel)
    job.sweep_id = sweep_id
    job.point_values = {p.point.index: dict(p.point.values) for p in points}
    # the job config of the array: its representative's (each point's differences: point.json)
    files: dict[str, str] = {"job.yaml": rep.files["job.yaml"]} if "job.yaml" in rep.files else {}
    for p in points:
        for name, text in p.files.items():
            files[f"{POINTS}/{p.point.index}/{name}"] = text
        files[f"{POINTS}/{p.point.index}/point.json"] = json.dumps(
            {"sweep": sweep_id, "index": p.point.index, "values": _redacted(p.point.values),
             "overrides": [_redacted_text(o) for o in p.point.overrides],
             "job_config": "../../job.yaml (the job this array was compiled from; this point differs in the overrides above)"},
            indent=1) + "\n"
    job.files = files
    executor = rep.executor.clone()
    job.executor = executor
    points_dir = os.path.join(job.job_dir, POINTS)
    seen_points = _seen(rep, points_dir)
    config = _unquoted(f"{seen_points}/{TASK}/train.yaml")
    job.args = [config if a == TRAIN_YAML or a == _seen(rep, os.path.join(rep.job_dir, "train.yaml")) else a
                for a in rep.args]
    if rep.launch_script is None and config not in job.args:
        raise ConfigError(f"{rep.name}: the job does not read --config {TRAIN_YAML}; a sweep cannot give "
                          "each point its config", hint="sweep it locally")
    executor.additional_parameters = {**(executor.additional_parameters or {}), "array": job.array}
    executor.job_details = _details_class()(points_dir=points_dir)
    point = f"{seen_points}/{TASK}"
    lines = [f'export NEMOTRON_JOB_DIR="{point}"',
             f"export NEMOTRON_SWEEP_ID={shlex.quote(sweep_id)}",
             f'export NEMOTRON_SWEEP_INDEX="{TASK}"',
             f'export NEMOTRON_SWEEP_VALUES="$(cat "{points_dir}/{TASK}/point.json")"']
    setup = executor.setup_lines or ""
    if rep.launch_script is not None:  # run.setup/run.cmd/nsys: each task its own scripts, config, dir
        setup = _launch_per_task(job, rep, rep.launch_script, setup)
    from nemo_runspec.slurm import resilience

    settings = resilience.settings_of(rep.values)
    if settings is not None:  # each task its own records, heartbeats and requeues
        from nemo_runspec.execution.runspec_cmd import TASK_TOKEN

        setup = resilience.per_array_task(executor, settings, job_dir=rep.job_dir, ray=rep.is_ray,
                                          bare_metal=not rep.executor.container_image, setup=setup,
                                          task=f"{POINTS}/{TASK_TOKEN}")
    if rep.secrets and rep.secret_path:
        from nemo_runspec.execution.secret_file import SECRET_FILE_NAME, source_snippet

        old = source_snippet(rep.secret_path)
        if old not in setup:
            raise ConfigError(f"{rep.name}: cannot find where the job sources its secrets file",
                              hint="this is a bug; please report it")
        word = f'{shlex.quote(points_dir + "/")}"$SLURM_ARRAY_TASK_ID"{shlex.quote("/" + SECRET_FILE_NAME)}'
        setup = setup.replace(old, source_snippet(f"{points_dir}/<task>/{SECRET_FILE_NAME}", shell_word=word))
    executor.setup_lines = "\n".join(x for x in (setup, *lines) if x)
    return job


def _launch_per_task(job: ArrayJob, rep: PreparedJob, spec: LaunchScript, setup: str) -> str:
    """``setup`` with the lines writing the representative's launch script replaced by
    lines writing each task's own (:mod:`nemo_runspec.slurm.launch_script`), which reads
    its point's config; the task runs that script."""
    from nemo_runspec.execution.runspec_cmd import TASK_TOKEN
    from nemo_runspec.slurm import launch_script as ls

    if spec.lines not in setup:
        raise ConfigError(f"{rep.name}: cannot find the lines that write its launch script",
                          hint="this is a bug; please report it")
    out = ls.render(rep, spec, task=f"{POINTS}/{TASK_TOKEN}")
    job.script = _unquoted(out.launch_path.replace(TASK_TOKEN, TASK))
    return setup.replace(spec.lines, "\n".join(x for x in out.lines if x))


def _unquoted(text: str) -> str:
    """``text`` marked for torchx/nemo-run not to shell-quote it (their ``_noquote``, as
    nemo-run marks ``$head_node_ip``), so the batch shell expands ``$SLURM_ARRAY_TASK_ID``.
    torchx's private marker, pinned with nemo-run 0.11.1 (tests/nemo_runspec/sweep/test_array.py
    renders every launch kind and checks the path reaches the shell unquoted)."""
    from torchx.components.dist import _noquote

    return _noquote(text)


def _redacted(values: dict[str, str]) -> dict[str, str]:
    return {k: _redacted_text(v) for k, v in values.items()}


def _redacted_text(text: str) -> str:
    from nemo_runspec.secrets import redact_text

    return redact_text(str(text))
