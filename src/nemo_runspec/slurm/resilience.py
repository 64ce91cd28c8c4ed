"""Resilience of a Slurm job: warning signal, checkpoint-and-requeue, stall watchdog, node exclusion.

A profile (or ``run.env``) with a ``resilience`` table
(:class:`~nemo_runspec.env.model.ResilienceModel`) turns it on. :func:`apply`
adds to the job's nemo-run executor, so the dry run shows every line:

- ``#SBATCH --signal=B:USR1@<signal_before>``: Slurm's warning before the time limit,
  to the batch shell;
- setup lines that write ``<job dir>/resilience/resilience.sh`` (``templates/resilience.sh``)
  and source it: the attempt is recorded, a ``USR1`` trap asks the training ranks
  to checkpoint and stop (``resilience/stop_request``), and the training ``srun``
  goes through the helper, which runs the real one in the background (so traps run
  while it does), starts the stall watchdog next to it, and when it returns records
  why the attempt ended and requeues the job (``scontrol requeue``, ``ExcNodeList``
  of the nodes that failed, ``StartTime=now``) while ``max_restarts`` allows. For
  nemo-run's scripts ``srun`` becomes a function doing that; a Ray job's template
  (``templates/ray_slurm.sub.j2``) routes only its driver's ``srun`` through the
  helper, never the raylets' (each attempt starts its own Ray cluster);
- ``NEMOTRON_RESILIENCE_DIR`` for the training processes (heartbeats, stop request,
  ``stopped`` marker: :mod:`nemotron.training.resilience` is the fallback's side).

docs/resilience.md describes every fault and what a user sees.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nemo_runspec.errors import ConfigError

if TYPE_CHECKING:
    from nemo_run.core.execution.slurm import SlurmExecutor

#: the warning signal Slurm sends the batch shell ``signal_before`` seconds before the time limit
WARNING_SIGNAL = "USR1"
#: the job dir's subdirectory holding records, heartbeats and the helper script
DIR_NAME = "resilience"
SCRIPT_NAME = "resilience.sh"
#: the environment variable naming that dir for the training processes
ENV_DIR = "NEMOTRON_RESILIENCE_DIR"
#: seconds into an attempt at which a native backend saves and stops by itself (time - signal_before)
ENV_EXIT_AFTER = "NEMOTRON_RESILIENCE_EXIT_AFTER"


@dataclass(frozen=True)
class Resilience:
    """The resolved ``resilience`` settings (defaults of :class:`~nemo_runspec.env.model.ResilienceModel`)."""

    max_restarts: int = 3
    signal_before: int = 300
    stall_timeout: int | None = None
    startup_timeout: int = 1800
    max_excluded_nodes: int = 2

    @property
    def signal_option(self) -> str:
        """``--signal``'s value: ``B:USR1@<signal_before>``."""
        return f"B:{WARNING_SIGNAL}@{self.signal_before}"


def settings_of(values: Mapping[str, Any]) -> Resilience | None:
    """The ``resilience`` table of merged execution settings, validated; None when absent."""
    raw = values.get("resilience")
    if raw is None:
        return None
    from nemo_runspec.env.model import ResilienceModel

    if not isinstance(raw, Mapping):
        raise ConfigError(f"resilience must be a table, got {raw!r}", key="resilience",
                          hint="e.g. [PROFILE.resilience] with max_restarts = 3")
    model = ResilienceModel.model_validate(dict(raw))  # validated with the profile already
    return Resilience(**model.model_dump())


def apply(executor: SlurmExecutor, settings: Resilience, *, job_dir: str, values: Mapping[str, Any], ray: bool,
          bare_metal: bool) -> None:
    """Add the signal, the setup lines and the env vars of ``settings`` to a Slurm ``executor``
    (of the job in ``job_dir``, with merged execution settings ``values``; ``ray``: a Ray job)."""
    executor.signal = settings.signal_option
    executor.retries = 0  # the helper requeues; nemo-run's TORCHX_MAX_RETRIES requeue stays off
    from nemo_runspec.env.model import time_limit_seconds

    extra = {ENV_DIR: _env_dir(job_dir, bare_metal)}
    limit = time_limit_seconds(str(values.get("time") or "")) if values.get("time") else None
    if limit is not None:  # for the native backends' own exit timers (docs/resilience.md)
        extra[ENV_EXIT_AFTER] = str(max(0, limit - settings.signal_before))
    executor.env_vars = {**(executor.env_vars or {}), **extra}
    lines = setup_lines(os.path.join(job_dir, DIR_NAME), settings, ray=ray)
    executor.setup_lines = "\n".join(x for x in (executor.setup_lines or "", lines) if x)


def _env_dir(job_dir: str, bare_metal: bool, task: str | None = None) -> str:
    """``NEMOTRON_RESILIENCE_DIR``'s value (a ``${...}`` in it expands in the batch shell)."""
    from nemo_runspec.execution.executor import shell_value
    from nemo_runspec.execution.runspec_cmd import TASK_TOKEN

    here = os.path.join(job_dir, task) if task else job_dir
    seen = os.path.join(here, DIR_NAME) if bare_metal else "/".join(x for x in ("/nemo_run", task, DIR_NAME) if x)
    return shell_value(seen.replace(TASK_TOKEN, "${SLURM_ARRAY_TASK_ID}"))


def per_array_task(executor: SlurmExecutor, settings: Resilience, *, job_dir: str, ray: bool, bare_metal: bool,
                   setup: str, task: str) -> str:
    """For a sweep's array (:mod:`nemo_runspec.sweep.array`): ``setup`` (the batch script's setup
    lines of ``executor``, to which :func:`apply` added its lines) with each task's own dir,
    ``<job dir>/<task>/resilience`` (``task`` holds :data:`~nemo_runspec.execution.runspec_cmd.TASK_TOKEN`): its records,
    heartbeats and helper, never shared; the helper requeues only its own task."""
    single = setup_lines(os.path.join(job_dir, DIR_NAME), settings, ray=ray)
    if single not in setup:
        from nemo_runspec.errors import ExecutionError

        raise ExecutionError("cannot find the job's resilience lines", hint="this is a bug; please report it")
    executor.env_vars = {**executor.env_vars, ENV_DIR: _env_dir(job_dir, bare_metal, task)}
    return setup.replace(single, setup_lines(os.path.join(job_dir, task, DIR_NAME), settings, ray=ray))


def script_text() -> str:
    """The helper the batch script sources (``templates/resilience.sh``)."""
    from nemo_runspec.templates import TEMPLATE_DIR

    return (TEMPLATE_DIR / SCRIPT_NAME).read_text()


def setup_lines(host_dir: str, settings: Resilience, *, ray: bool = False) -> str:
    """The batch-script lines: write and source the helper, record the attempt, trap the
    signals, route ``srun`` through the helper. ``ray``: not ``srun`` itself, which also
    starts the raylets; the Ray template sends only its driver's through the helper."""
    from nemo_runspec.execution.runspec_cmd import heredoc_to, task_word

    d = task_word(host_dir)
    script = task_word(os.path.join(host_dir, SCRIPT_NAME))
    assigns = (f"NR_DIR={d} NR_MAX_RESTARTS={settings.max_restarts} "
               f"NR_STALL_TIMEOUT={settings.stall_timeout or 0} NR_STARTUP_TIMEOUT={settings.startup_timeout} "
               f"NR_MAX_EXCLUDED={settings.max_excluded_nodes}")
    lines = [
        f"# resilience (docs/resilience.md): --signal={settings.signal_option}, requeue up to "
        f"{settings.max_restarts} time(s), failed nodes excluded (at most {settings.max_excluded_nodes}), "
        + (f"watchdog: stall_timeout {settings.stall_timeout} s" if settings.stall_timeout else "no watchdog")
        + ("; the Ray driver's srun goes through the helper" if ray else ""),
        f"mkdir -p {d}",
        heredoc_to(os.path.join(host_dir, SCRIPT_NAME), script_text()),
        assigns,
        f". {script}",
        "nemotron_attempt_begin",
        f"trap 'nemotron_on_signal {WARNING_SIGNAL}' {WARNING_SIGNAL}",
        "trap 'nemotron_on_signal TERM' TERM",
    ]
    if not ray:
        lines.append('srun() { nemotron_srun "$@"; }')
    return "\n".join(lines)
