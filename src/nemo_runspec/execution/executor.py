"""Build the nemo-run executor of a job from its execution settings and runspec.

Rules (see docs/execution.md for the full key-by-key table):

- The runspec's ``resources`` (nodes, gpus_per_node) are defaults; profile keys win.
- ``partition``: ``run_partition`` for ``--run``, ``batch_partition`` for
  ``--batch``, else ``partition``.
- ``container_image``: the profile's value, else the runspec ``image``. A profile
  that sets ``container_image = ""`` (or ``"none"``) runs bare metal: no pyxis
  flags, the job runs in ``<job dir>/code`` on the nodes' own Python.
- Launch: ``torchrun`` -> nemo-run ``Torchrun`` launcher (one task per node,
  ``--nproc-per-node`` from :func:`~nemo_runspec.env.resources.torchrun_processes`);
  ``direct`` -> plain ``python script``; ``ray`` -> our Ray template
  (:mod:`nemo_runspec.execution.ray`), the script being the Ray driver.
- Secrets never reach ``env_vars``: they go to a 0600 file sourced by the setup
  lines (:mod:`nemo_runspec.execution.secret_file`).
- Startup commands run once per node, before the launcher, through
  ``srun --ntasks-per-node=1 --ntasks=$SLURM_JOB_NUM_NODES``; a failure fails the job.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nemo_runspec.env.profile import partition_for
from nemo_runspec.env.registry import DEFAULT_EXECUTOR, backend_class
from nemo_runspec.env.resources import torchrun_processes
from nemo_runspec.errors import ExecutionError
from nemo_runspec.job.settings import (
    bare_metal_python,
    container_image,
    launch_of,
    profile_values,
    resolve_resources,
)
from nemo_runspec.secrets import is_secret_env, marked_names

if TYPE_CHECKING:
    from nemo_run.core.execution.base import Executor
    from nemo_run.core.packaging.base import Packager
    from nemo_run.core.tunnel.client import Tunnel

    from nemo_runspec.spec.models import Runspec

DEFAULT_TIME = "04:00:00"
DEFAULT_JOB_NAME_PREFIX = "nemotron-"
#: the nemo-run executors built here, as the local and Slurm backends declare them
#: (``nemo_run_executor``); any other is built from its backend's declared fields
#: (:mod:`nemo_runspec.execution.backends`)
LOCAL_EXECUTOR = "nemo_run.core.execution.local:LocalExecutor"
SLURM_EXECUTOR = "nemo_run.core.execution.slurm:SlurmExecutor"


def get_startup_commands(env: Mapping[str, object] | None) -> list[str]:
    """The profile's ``startup_commands`` (a string is one command)."""
    cmds = profile_values(env).get("startup_commands") or []
    if isinstance(cmds, str):
        cmds = [cmds]
    return [str(c) for c in cmds if str(c).strip()]


def per_node_setup(startup_commands: Sequence[str]) -> str:
    """sbatch lines running ``startup_commands`` once on every node of the job."""
    if not startup_commands:
        return ""
    body = " && ".join(f"( {c} )" for c in startup_commands)
    return (
        "srun --ntasks-per-node=1 --ntasks=$SLURM_JOB_NUM_NODES --kill-on-bad-exit=1 "
        f"bash -c {shlex.quote(body)} "
        "|| { echo 'nemotron: startup commands failed' >&2; exit 1; }"
    )


def create_executor(
    *,
    env: Mapping[str, object] | None,
    env_vars: Mapping[str, str] | None = None,
    packager: Packager | None = None,
    mode: str = "run",
    job_name: str | None = None,
    runspec: Runspec | None = None,
    startup_commands: Sequence[str] | None = None,
    job_dir: str | os.PathLike[str] | None = None,
    secret_file: str | None = None,
    dependencies: Sequence[str] | None = None,
    tunnel: Tunnel | None = None,
) -> Executor:
    """Build the nemo-run executor of one job: ``SlurmExecutor``, ``LocalExecutor``, or
    Docker/SkyPilot/DGX Cloud/Lepton's for a profile with that ``executor``.

    ``create_executor(env=env, env_vars=env_vars, packager=packager)`` is the
    reference system's call: ``mode`` defaults to ``run`` (``run_partition``),
    ``runspec`` to none (launch ``direct``, resources from the profile only).
    ``env_vars`` must be the *plain* variables only (see :func:`build_env_vars`);
    ``secret_file`` is the path of the secrets file as seen by the job, sourced
    and deleted by the setup lines. ``job_dir`` is the local Experiment base dir
    used to derive a local tunnel's job dir; pass ``tunnel`` to reuse one.
    ``dependencies`` are Slurm job ids this job must wait for
    (``dependency_type``, default ``afterok``).

    ``env`` is a profile (:func:`~nemo_runspec.env.load_env_profile`) or a plain
    mapping, which is read and checked exactly like an env.toml profile
    (``container`` is ``container_image``, ``env_vars`` may be a list, an
    unknown key is an error with "did you mean"). Docker, SkyPilot, DGX Cloud
    and Lepton profiles get the executor the CLI builds for them
    (:mod:`nemo_runspec.execution.backends`); ``secret_file`` is for Slurm only.
    """
    from nemo_runspec._nemo_run import lean

    lean()  # the executor's modules, not all of nemo-run (_nemo_run.py)
    from nemo_run.core.execution.launcher import Torchrun

    values = profile_values(env, validate=True)
    env_vars = dict(env_vars or {})
    marked = marked_names(values)  # the profile's secret_env_vars / public_env_vars, as everywhere
    for name, value in env_vars.items():
        if is_secret_env(name, marked, value):
            raise ExecutionError(
                f"secret {name} passed in env_vars, which the job script would show",
                hint="split them off: plain, secrets = build_env_vars(job_config, env, split=True); "
                     "pass env_vars=plain and the secrets as a 0600 file: "
                     "write_secret_file(path, secrets) (nemo_runspec.execution.secret_file) and "
                     "create_executor(..., secret_file=<that path as the job sees it>)",
            )
    launch = launch_of(runspec)
    if launch not in ("torchrun", "direct", "ray"):
        raise ExecutionError(f"unknown launch {launch!r}", hint="torchrun, ray or direct")

    nodes, gpus = resolve_resources(values, runspec)
    ntasks = int(values.get("ntasks_per_node") or 1)
    nproc = torchrun_processes(values, gpus)
    launcher = Torchrun() if launch == "torchrun" else None
    backend = backend_class(str(values.get("executor") or DEFAULT_EXECUTOR))
    startup = list(startup_commands if startup_commands is not None else get_startup_commands(env))

    if backend.nemo_run_executor == LOCAL_EXECUTOR:
        from nemo_run.core.execution.local import LocalExecutor

        return LocalExecutor(
            launcher=launcher,
            ntasks_per_node=int(nproc) if launch == "torchrun" else 1,
            env_vars=dict(env_vars),
        )
    if backend.nemo_run_executor != SLURM_EXECUTOR:
        return _other_executor(backend.name, values, runspec=runspec, launch=launch, nodes=nodes,
                               gpus=gpus, nproc=int(nproc), env_vars=env_vars, packager=packager,
                               secret_file=secret_file)

    if tunnel is None:
        from nemo_runspec.execution.tunnels import build_tunnel, default_base_dir

        tunnel = build_tunnel(values, base_dir=job_dir or default_base_dir(values))

    setup: list[str] = []
    if secret_file:
        from nemo_runspec.execution.secret_file import source_snippet

        setup.append(source_snippet(secret_file))
    if startup and launch != "ray":  # Ray: the template runs them once per node before its raylet
        setup.append(per_node_setup(startup))

    from nemo_run.core.execution.slurm import SlurmExecutor

    executor = SlurmExecutor(
        account=str(values["account"]) if values.get("account") else None,  # None: no --account line
        partition=partition_for(values, mode),
        job_name_prefix=values.get("job_name_prefix", DEFAULT_JOB_NAME_PREFIX),
        time=str(values.get("time") or DEFAULT_TIME),
        nodes=nodes,
        ntasks_per_node=1 if launch == "ray" else ntasks,
        cpus_per_task=values.get("cpus_per_task"),
        gpus_per_node=gpus if gpus > 0 else None,
        qos=values.get("qos"),
        mem=values.get("mem"),
        constraint=values.get("constraint"),
        exclude=values.get("exclude"),
        gres=values.get("gres"),
        exclusive=values.get("exclusive") or None,
        container_image=container_image(values, runspec),
        container_mounts=list(values.get("mounts") or []),
        additional_parameters=dict(values.get("sbatch_options") or {}) or None,
        srun_args=list(values.get("srun_args") or []) or None,
        dependencies=[],
        dependency_type=str(values.get("dependency_type") or "afterok"),
        setup_lines="\n".join(setup) or None,
        tunnel=tunnel,
        packager=packager,
        launcher=launcher,
        # nemo-run substitutes its macros into a batch job's env values (not a Ray job's)
        env_vars={k: shell_value(v) if launch == "ray" else _template_safe(shell_value(v))
                  for k, v in env_vars.items()},
        retries=int(values.get("retries") or 0),
        poll_estimated_start_time=False,
    )
    if launch == "torchrun":
        executor.torchrun_nproc_per_node = int(nproc)
    if launch == "ray":
        from nemo_runspec.execution.ray import configure_ray_executor

        configure_ray_executor(executor, profile=values, python=bare_metal_python(),
                               pre_start_commands=startup)
    if dependencies:
        executor.dependencies = [_as_handle(d) for d in dependencies]
    return executor


def _other_executor(kind: str, values: Mapping[str, Any], *, runspec: Runspec | None, launch: str,
                    nodes: int, gpus: int, nproc: int, env_vars: Mapping[str, str], packager: Packager | None,
                    secret_file: str | None) -> Executor:
    """A Docker, SkyPilot, DGX Cloud or Lepton executor: the fields the CLI builds
    (:func:`nemo_runspec.execution.backends.executor_fields`), from the validated profile."""
    from nemo_runspec.execution.backends import build_executor, executor_fields, platform

    if secret_file:
        raise ExecutionError(
            f"secret_file= is sourced by the Slurm batch script; executor = {kind!r} has none",
            key="executor",
            hint="run the job through the nemotron CLI (it delivers secrets for every executor), "
                 "or give the job its secrets yourself (Lepton: secret_vars in the profile)")
    refusal = platform(kind).nodes_problem(nodes)
    if refusal is not None:
        raise ExecutionError(refusal[0], key="nodes", hint="set nodes = 1")
    fields = executor_fields(kind, values, nodes=nodes, gpus=gpus,
                             nproc=nproc if launch == "torchrun" else 1,
                             image=container_image(values, runspec), env_vars=dict(env_vars))
    return build_executor(kind, fields, packager=packager)


def shell_value(value: object) -> str:
    """Make an env value safe for nemo-run's unquoted ``export KEY=value`` line: the shell word
    of :func:`nemo_runspec.dollar.shell_word` (data, except ``$NAME``, ``${NAME}``,
    ``${NAME:-default}``, which expand in the job, and ``$$``, a literal ``$``)."""
    from nemo_runspec.dollar import shell_word

    return shell_word(str(value))


def _template_safe(word: str) -> str:
    """``word`` for nemo-run's batch request, which passes env values through
    ``string.Template.safe_substitute`` (its macros): ``$$`` there becomes ``$`` again."""
    return word.replace("$", "$$")


def _as_handle(job_id: str) -> str:
    """nemo-run expects TorchX handles for dependencies; wrap a bare Slurm job id."""
    return job_id if "://" in str(job_id) else f"slurm_tunnel://nemo_run/{job_id}"


# --------------------------------------------------------------------------- local runs
