"""Run a compiled job on nemo-run's Docker, SkyPilot, DGX Cloud or Lepton executor.

:func:`prepare` builds everything without writing or contacting anything: the
executor (:mod:`nemo_runspec.execution.backends`), the job files (``job.yaml``,
``train.yaml``, ``nemotron-job.sh``) and the secrets. :func:`show` is the dry
run (the executor's fields, secrets redacted, and the job script);
its backend's ``submit`` writes the job dir (:func:`write_job_dir`)
and starts the job:

- **docker**: through nemo-run's own Docker scheduler objects (``DockerExecutor``,
  ``PersistentDockerScheduler``: package, ``containers.run`` with the job dir at
  ``/nemo_run``). ``--batch`` returns with the container name; ``--run`` follows
  the log nemo-run's container writes and exits with the script's exit code
  (from the status file the container writes when it ends). nemo-run's
  ``Experiment`` cannot detach from Docker jobs, hence the scheduler objects.
- **skypilot, dgxcloud, lepton**: a ``nemo_run.Experiment`` with the one task,
  ``run(detach=...)``. These need a cloud account; what is verified here is the
  request they would send (docs/execution.md, "Other executors").

Every job runs ``bash /nemo_run/nemotron-job.sh``: it sources and deletes the
secrets file (Docker, SkyPilot), runs the startup commands, changes to the code
dir and execs the recipe (python, torchrun or ``run.cmd``). Values in it are
shell-quoted; ``startup_commands`` and ``run.cmd`` are shell by design.

Secrets: Docker and SkyPilot get them in a 0600 file in the job dir (which only
the container or the VM sees; never in the container's environment, which
``docker inspect`` shows). DGX Cloud and Lepton copy the job dir into a
workload's command line, so a file is not private there: Lepton takes them
from its own secret store (``secret_vars``), DGX Cloud jobs with secrets are
refused with what to do.
"""

from __future__ import annotations

import os
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nemo_runspec.errors import ExecutionError

if TYPE_CHECKING:
    from collections.abc import Callable

    from nemo_run.core.execution.base import Executor
    from nemo_run.core.packaging.base import Packager
    from rich.console import Console

    from nemo_runspec.job.compiled import CompiledJob
    from nemo_runspec.packaging import PackagingPlan

SEEN = "/nemo_run"  # where every one of these executors puts the job dir
TASK_SCRIPT = "nemotron-job.sh"
TRAIN_YAML = f"{SEEN}/train.yaml"
RDZV_PORT = 29500


@dataclass
class BackendJob:
    """A job prepared for one of nemo-run's other executors (nothing written yet)."""

    kind: str
    name: str
    mode: str
    fields: dict[str, Any]
    executor: Executor
    files: dict[str, str]
    secrets: dict[str, str]
    base_dir: Path
    exp_id: str
    image: str | None
    profile_secrets: list[str] = field(default_factory=list)
    #: dry run only: why submission would refuse the job (its secrets cannot be delivered)
    refused: str | None = None

    @property
    def exp_dir(self) -> Path:
        """nemo-run's experiment dir: ``<base>/experiments/<name>/<exp id>``."""
        return self.base_dir / "experiments" / self.name / self.exp_id

    @property
    def job_dir(self) -> Path:
        """The task's dir (mounted at ``/nemo_run``)."""
        return self.exp_dir / self.name


def prepare(job: CompiledJob, packager: Packager | None, plan: PackagingPlan | None = None) -> BackendJob:
    """Build the executor, job script and secrets of ``job`` (see the module docstring)."""
    from nemo_runspec.env.resources import torchrun_processes
    from nemo_runspec.execution.backends import build_executor, executor_fields, platform
    from nemo_runspec.execution.env_vars import code_env, split_env_vars
    from nemo_runspec.execution.tunnels import default_base_dir
    from nemo_runspec.job.settings import container_image, job_slug, resolve_resources
    from nemo_runspec.secrets import find_secret_values, secret_arguments

    kind = job.executor
    declared = platform(kind)
    values = dict(job.run_env)
    plain, secrets = split_env_vars(job.job_config, job.run_env, runspec=job.runspec,
                                    wandb_section=job.sections.get("wandb"), registry=job.registry)
    plain = {**plain, **code_env(plan)}
    found = secret_arguments(job.passthrough)
    if found:
        raise ExecutionError("a script argument carries a secret, which would be written into the job's "
                             "command line", hint="give it to the job as an env var in the profile's env_vars")
    refused: str | None = None
    try:
        secrets = declared.deliverable_secrets(secrets, values)
    except ExecutionError as exc:
        if not job.dry_run:
            raise
        # a dry run shows the job anyway (the secrets' names only) and says what submission refuses
        refused = str(exc)
    nodes, gpus = resolve_resources(values, job.runspec)
    launch = job.launch
    refusal = declared.nodes_problem(nodes)
    if refusal is not None:
        raise ExecutionError(refusal[0], key="nodes", hint=refusal[1])
    if launch == "ray" and nodes > 1:
        raise ExecutionError(f"a Ray recipe over {nodes} nodes runs on Slurm here (our Ray template); "
                             f"executor = {kind!r} starts it on one node", key="nodes", hint="set nodes = 1")
    nproc = int(torchrun_processes(values, gpus)) if launch == "torchrun" else 1
    image = container_image(values, job.runspec)
    fields = executor_fields(kind, values, nodes=nodes, gpus=gpus, nproc=nproc, image=image, env_vars=plain)
    try:
        executor = build_executor(kind, fields, packager=packager)
    except ExecutionError:
        if not job.dry_run:
            raise
        # a dry run is offline and shows the fields; only submission needs SkyPilot itself
        executor = None
    name = job_slug(job.name)
    files = dict(job.files())
    script = (plan.script if plan is not None else None) or str(job.runspec.script_path)
    files.update(job_script(job, kind=kind, rendezvous=declared.rendezvous, script=script, nodes=nodes,
                            nproc=nproc, has_secrets=bool(secrets) and refused is None,
                            exports={k: v for k, v in plain.items() if "$" in str(v)}))
    return BackendJob(kind=kind, name=name, mode=job.mode, fields=fields, executor=executor, files=files,
                      secrets=secrets, base_dir=default_base_dir(values), exp_id=f"{name}_{time.time_ns()}",
                      image=image, profile_secrets=[str(v) for v in find_secret_values(values)],
                      refused=refused)


def job_script(job: CompiledJob, *, kind: str, rendezvous: tuple[str, str] | None, script: str, nodes: int,
               nproc: int, has_secrets: bool, exports: dict[str, str] | None = None) -> dict[str, str]:
    """``nemotron-job.sh`` (and ``runspec_setup.sh`` for a runspec ``setup``): name -> text.
    ``rendezvous``: (head node address, node rank) of a multi-node torchrun as the platform
    exports them (its backend's declaration). ``exports``: env vars whose ``$`` forms the
    job's shell expands (the executor hands the others to the container as they are;
    nemo_runspec.dollar)."""
    from nemo_runspec.dollar import shell_word
    from nemo_runspec.execution import runspec_cmd as rc
    from nemo_runspec.execution.secret_file import SECRET_FILE_NAME

    runspec = job.runspec
    script = script if os.path.isabs(script) else f"{SEEN}/code/{script}"
    args = [*job.passthrough]
    values = {"script": script, "config": TRAIN_YAML, "args": args, "job_dir": SEEN}
    if job.launch == "torchrun":
        if nodes > 1:
            if rendezvous is None:
                raise ExecutionError(f"executor = {kind!r} runs one node; nodes = {nodes}", key="nodes",
                                     hint="set nodes = 1")
            head, rank = rendezvous
            where = (f'--nnodes {int(nodes)} --rdzv-backend c10d --rdzv-endpoint "{head}:{RDZV_PORT}" '
                     f'--node-rank "{rank}"')
        else:
            where = "--standalone --nnodes 1"
        command = f"torchrun {where} --nproc-per-node {int(nproc)} {rc.torchrun_tail(runspec, **values)}"
    elif runspec.run.cmd:
        command = rc.script_command(runspec, python="python", **values)
    else:
        command = '"$PYTHON" ' + shlex.join([script, "--config", TRAIN_YAML, *args])
    lines = ["#!/bin/bash", f"# Generated by nemotron for {job.name} (executor = {kind}).", "set -e"]
    if has_secrets:
        path = shlex.quote(f"{SEEN}/{SECRET_FILE_NAME}")
        lines.append(f"set +x; set -a; . {path}; set +a; rm -f {path}")
    lines += [f"export {name}={shell_word(str(value))}" for name, value in (exports or {}).items()]
    lines += [str(c) for c in job.run_env.get("startup_commands") or []]
    lines.append(f"cd {shlex.quote(f'{SEEN}/code')} 2>/dev/null || cd {shlex.quote(SEEN)}")
    lines.append('PYTHON=$(command -v python || command -v python3)')
    out: dict[str, str] = {}
    setup = runspec.run.setup_script
    if setup:
        out[rc.SETUP_FILE] = rc.setup_text(setup)
    launch = rc.launch_text(command, setup_path=f"{SEEN}/{rc.SETUP_FILE}" if setup else None,
                            workdir=runspec.run.workdir)
    out[TASK_SCRIPT] = "\n".join(lines) + "\n" + launch.split("\n", 2)[2]
    return out


def show(job: CompiledJob, prepared: BackendJob, *, extra: Callable[[Console], object] | None = None) -> int:
    """The dry run: the job, the executor's fields (secrets redacted) and the job script, then
    what ``extra`` prints (the command's own block); returns 0."""
    from nemo_runspec.execution.dry_run_display import show_rendered

    scripts, warnings = dry_run_parts(prepared)
    show_rendered(job, scripts=scripts, warnings=warnings, extra=extra)
    return 0


def dry_run_parts(prepared: BackendJob) -> tuple[dict[str, str], tuple[str, ...]]:
    """What the dry run shows of ``prepared``: title -> text of the executor's fields (secrets
    redacted), the job script and the secrets' names; and the warning lines (what submitting
    would refuse)."""
    from nemo_runspec.config.yaml_io import to_yaml
    from nemo_runspec.execution.backends import executor_class_name
    from nemo_runspec.secrets import redact, redact_text

    cls = type(prepared.executor).__name__ if prepared.executor is not None else \
        f"{executor_class_name(prepared.kind)}, not built here: its package is not installed"
    fields = redact(prepared.fields, extra_values=prepared.profile_secrets)
    scripts = {f"nemo-run {cls} (fields)": to_yaml(fields)}
    for name, text in prepared.files.items():
        if name.endswith(".sh"):
            scripts[f"{SEEN}/{name}"] = redact_text(text, prepared.profile_secrets)
    if prepared.secrets and prepared.refused is None:
        scripts[f"{SEEN}/.nemotron-secrets.env (mode 0600, deleted when the job starts)"] = \
            "".join(f"{k}=***REDACTED***\n" for k in sorted(prepared.secrets))
    elif prepared.secrets:
        scripts["secrets the job needs (not delivered: see the warning)"] = \
            "".join(f"{k}=***REDACTED***\n" for k in sorted(prepared.secrets))
    warnings = () if prepared.refused is None else (
        f"warning: submitting this job would stop here: {redact_text(prepared.refused, prepared.profile_secrets)}",)
    return scripts, warnings


def write_job_dir(prepared: BackendJob) -> None:
    """Write the job files (and the 0600 secrets file) into the job dir."""
    from nemo_runspec.execution.secret_file import SECRET_FILE_NAME, write_secret_file

    prepared.job_dir.mkdir(parents=True, exist_ok=True)
    for name, text in prepared.files.items():
        (prepared.job_dir / name).write_text(text)
    if prepared.secrets:
        write_secret_file(prepared.job_dir / SECRET_FILE_NAME, prepared.secrets)
