"""Nsight Systems around a Slurm job's training command (``run.profile.nsys=true``).

With ``[PROFILE.profiling] nsys = true`` (or ``run.profile.nsys=true`` on the command
line) the job starts through its launch script (``runspec_launch.sh``, as a
runspec with ``setup``/``run.cmd`` does: :mod:`nemo_runspec.slurm.launch_script`)
and that script runs, on every node and inside the job's container::

    command -v nsys >/dev/null 2>&1 || { echo 'error: ...' >&2; exit 2; }
    mkdir -p <output dir>
    exec nsys profile -s none -t nvtx,cuda -o '<output dir>/profile_%p_%q{SLURM_JOB_ID}_node%q{SLURM_NODEID}_rank%q{SLURM_PROCID}'
        --force-overwrite=true --capture-range=cudaProfilerApi --capture-range-end=stop
        --cuda-graph-trace=node --cuda-event-trace=false torchrun ...

These are the options llmb and CloudAI run with: Megatron-Bridge's ``NsysPlugin``
(pinned 0.3.1, ``recipes/run_plugins.py``) sets nemo-run's launcher defaults
(``nemo_run.core.execution.launcher.Launcher``: ``-s none -t nvtx,cuda``, the four
``--capture-*``/``--cuda-*`` options) and that file name. Nothing is captured
until the training process calls ``cudaProfilerStart``: the job gets
``NEMOTRON_NSYS_STEPS=start:end`` and ``NEMOTRON_NSYS_RANKS=0,1``, which the
fallback trainer honours and Megatron-Bridge receives as its
``profiling.use_nsys_profiler``/``profile_step_start``/``profile_step_end``/``profile_ranks``.

A missing ``nsys`` in the image is the one ``error:`` line above, exit 2, at the
start of the job (not a Python traceback an hour later). Not runnable here (no
GPU, no nsys): the tests check the rendered script and run its guard.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: the job's environment: which steps and ranks capture (read by the trainer)
STEPS_ENV, RANKS_ENV = "NEMOTRON_NSYS_STEPS", "NEMOTRON_NSYS_RANKS"
#: nemo-run's launcher defaults, as Megatron-Bridge's NsysPlugin uses them (see the module docstring)
CAPTURE_ARGS = ("--force-overwrite=true", "--capture-range=cudaProfilerApi", "--capture-range-end=stop",
                "--cuda-graph-trace=node", "--cuda-event-trace=false")
#: nsys expands %p and %q{VAR} itself: one file per process, named by job, node and rank
FILE_NAME = "profile_%p_%q{SLURM_JOB_ID}_node%q{SLURM_NODEID}_rank%q{SLURM_PROCID}"
DEFAULT_DIR = "nsys"


@dataclass(frozen=True)
class NsysSettings:
    """The validated ``profiling`` table (:class:`nemo_runspec.env.profiling.ProfilingModel`)."""

    start_step: int = 10
    end_step: int = 12
    ranks: tuple[int, ...] = (0,)
    output_dir: str | None = None
    trace: str = "nvtx,cuda"
    extra_args: tuple[str, ...] = field(default_factory=tuple)


def settings_of(values: Mapping[str, Any]) -> NsysSettings | None:
    """The nsys settings of a profile's values, None unless ``profiling.nsys`` is true."""
    table = values.get("profiling")
    if not isinstance(table, Mapping) or not table.get("nsys"):
        return None
    from nemo_runspec.env.profiling import ProfilingModel

    model = ProfilingModel(**dict(table))
    return NsysSettings(start_step=model.start_step, end_step=model.end_step, ranks=tuple(model.ranks),
                        output_dir=model.output_dir, trace=model.trace, extra_args=tuple(model.extra_args))


def output_dir(settings: NsysSettings, job_dir_seen: str) -> str:
    """Where the reports go, as the job sees it: ``output_dir``, else ``<job dir>/nsys``."""
    return settings.output_dir or f"{job_dir_seen.rstrip('/')}/{DEFAULT_DIR}"


def nsys_command(settings: NsysSettings, out_dir: str) -> list[str]:
    """``nsys profile ...`` (the words before the training command)."""
    return ["nsys", "profile", "-s", "none", "-t", settings.trace, "-o", f"{out_dir}/{FILE_NAME}",
            *CAPTURE_ARGS, *settings.extra_args]


def guard_lines(out_dir: str) -> list[str]:
    """Launch-script lines before the command: nsys must be there, the output dir is made."""
    message = ("error: run.profile.nsys is on but nsys is not installed in the job's image "
               "(use an image with Nsight Systems, or run.profile.nsys=false)")
    return [f"command -v nsys >/dev/null 2>&1 || {{ echo {shlex.quote(message)} >&2; exit 2; }}",
            f"mkdir -p {shlex.quote(out_dir)}"]


def wrap(command: str, settings: NsysSettings, out_dir: str) -> str:
    """``command`` (a shell command line) run under ``nsys profile``."""
    return shlex.join(nsys_command(settings, out_dir)) + " " + command


def env_vars(settings: NsysSettings) -> dict[str, str]:
    """What the training processes read: the steps and ranks that capture."""
    return {STEPS_ENV: f"{settings.start_step}:{settings.end_step}",
            RANKS_ENV: ",".join(str(r) for r in settings.ranks)}
