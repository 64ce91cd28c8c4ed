"""A Slurm job that starts through the runspec's launch script (``setup``, ``run.cmd``,
``run.profile.nsys``), for one job or for every task of a sweep's array.

The setup lines of the batch script write ``runspec_setup.sh`` and
``runspec_launch.sh`` (:mod:`nemo_runspec.execution.runspec_cmd`) into the job dir,
so the dry run shows them byte for byte; the task becomes ``bash <job dir>/runspec_launch.sh``:
once per Slurm task for ``direct``, once per node for ``torchrun`` (the script execs
torchrun, whose workers run ``run.cmd``), the driver for ``ray``, whose nodes also
source the setup before their raylet starts. Paths in the scripts are as the job sees
them: ``/nemo_run`` in a container, the job dir itself on bare metal (as nemo-run
rewrites them).

In a sweep's array (:mod:`nemo_runspec.sweep.array`) every task writes its own two
scripts into its point's dir, ``points/<N>/``, and they read that point's
``train.yaml`` (``{config}``) and name that dir as ``{job_dir}``: :func:`render` with
``task`` writes the paths with :data:`TASK_TOKEN`, which the batch shell turns into
``$SLURM_ARRAY_TASK_ID`` as it writes the files (tasks never share a file, so none
rewrites a script another is running).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from nemo_runspec.execution.runspec_cmd import heredoc_to, task_word

if TYPE_CHECKING:
    from nemo_runspec.slurm.profiling import NsysSettings
    from nemo_runspec.spec.models import Runspec

#: where the job's files are, as its processes see them in a container
SEEN = "/nemo_run"


@dataclass(frozen=True)
class LaunchScript:
    """How a prepared job starts through its launch script: enough to render the same
    lines again for an array's tasks (:func:`render` with ``task``)."""

    runspec: Runspec | None
    script: str
    args: tuple[str, ...]
    script_args: tuple[str, ...]
    bare_metal: bool
    nsys: NsysSettings | None = None
    #: the path of the job's train config as the job sees it, and torchrun's --rdzv-id
    train_yaml: str = "/nemo_run/train.yaml"
    rdzv_id: int = 0
    #: the batch-script lines :func:`~nemo_runspec.slurm.prepared.use_launch_script` added
    #: (replaced as a block for an array)
    lines: str = ""
    env_vars: dict[str, str] = field(default_factory=dict)


class Launching(Protocol):
    """What :func:`render` reads of the job it renders for: a
    :class:`~nemo_runspec.slurm.prepared.PreparedJob` (named by its shape: that module uses
    this one)."""

    @property
    def job_dir(self) -> str:
        """The job dir as the cluster sees it."""
        ...

    @property
    def launch(self) -> str:
        """``torchrun``, ``ray`` or ``direct``."""
        ...

    @property
    def is_ray(self) -> bool:
        """True for the driver of a Ray cluster (our template)."""
        ...

    @property
    def executor(self) -> Any:
        """The nemo-run ``SlurmExecutor`` (its ``nodes`` and ``torchrun_nproc_per_node`` are read)."""
        ...


@dataclass(frozen=True)
class Rendered:
    """The setup lines, the path of the launch script the task runs, and env vars to add."""

    lines: list[str]
    launch_path: str
    env_vars: dict[str, str]


def render(prepared: Launching, spec: LaunchScript, *, task: str | None = None) -> Rendered:
    """The batch-script lines that write the launch (and setup) script and the path the task
    runs. ``task``: the dir of an array task under the job dir (``points/<TASK_TOKEN>``):
    its scripts, config and ``{job_dir}`` are there, and the lines write them through a
    ``sed`` that puts the task's index in place of :data:`TASK_TOKEN`."""
    from nemo_runspec.execution import runspec_cmd as rc
    from nemo_runspec.execution.ray import pre_start_setup_lines

    runspec, executor = spec.runspec, prepared.executor
    here = f"{SEEN}/{task}" if task else SEEN

    def visible(path: str) -> str:
        return prepared.job_dir + path[len(SEEN):] if spec.bare_metal and path.startswith(SEEN) else path

    script = spec.script if os.path.isabs(spec.script) else f"{SEEN}/code/{spec.script}"
    config = f"{here}/train.yaml" if task else spec.train_yaml
    values = {"script": visible(script), "config": visible(config), "args": list(spec.script_args),
              "job_dir": visible(here)}
    if prepared.launch == "torchrun":
        command = rc.slurm_torchrun(rc.torchrun_tail(runspec, **values), nodes=int(executor.nodes),
                                    nproc=int(getattr(executor, "torchrun_nproc_per_node", 1) or 1),
                                    rdzv_id=spec.rdzv_id)
    elif runspec is not None and runspec.run.cmd:
        command = rc.script_command(runspec, python="python", **values)
    else:  # setup only: the command nemo-run would have run
        args = [values["config"] if a == spec.train_yaml else a for a in spec.args]
        command = shlex.join(["python", values["script"], *[visible(a) for a in args]])
    lines = []
    if prepared.launch == "torchrun":  # the rendezvous address, for srun's tasks
        lines.append(f'export {rc.HEAD_NODE_ENV}="${rc.HEAD_NODE_IP}"')
    setup_path = None
    setup = runspec.run.setup_script if runspec is not None else ""  # run.setup; the top-level setup only describes the image
    if setup:
        setup_path = visible(f"{here}/{rc.SETUP_FILE}")
        lines.append(_write(prepared.job_dir, task, rc.SETUP_FILE, rc.setup_text(setup)))
    env_vars: dict[str, str] = {}
    before: list[str] = []
    if spec.nsys is not None:  # run.profile.nsys (nemo_runspec.slurm.profiling)
        from nemo_runspec.slurm import profiling

        out_dir = profiling.output_dir(spec.nsys, visible(here))
        before, command = profiling.guard_lines(out_dir), profiling.wrap(command, spec.nsys, out_dir)
        env_vars = profiling.env_vars(spec.nsys)
    lines.append(_write(prepared.job_dir, task, rc.LAUNCH_FILE,
                        rc.launch_text(command, setup_path=setup_path, workdir=runspec.run.workdir if runspec is not None else None,
                                      before=before)))
    if prepared.is_ray and setup_path:  # every node, before its raylet: what the workers run in
        lines.append(pre_start_setup_lines([f"set +u; . {task_word(setup_path)}; set -u"]))
    return Rendered(lines, visible(f"{here}/{rc.LAUNCH_FILE}"), env_vars)


def _write(job_dir: str, task: str | None, name: str, text: str) -> str:
    """Batch-script lines writing ``text`` to ``name`` in the job dir (or the task's dir,
    with the task's index put in place of :data:`TASK_TOKEN` as it is written)."""
    return heredoc_to(os.path.join(job_dir, task or "", name), text, fill_task=True)
