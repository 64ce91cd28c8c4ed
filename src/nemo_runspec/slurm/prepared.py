"""A Slurm job ready to render or submit: the nemo-run executor plus its job dir layout.

Layout: the Experiment lives in ``<base_dir>/experiments/<title>/<exp_id>/`` locally;
the job dir the cluster sees is ``<tunnel job dir>/<title>/<exp_id>/<name>/`` (the
same path for a local tunnel). Logs: ``log-<job name>_<id>_0.out`` (the ``srun``
step, i.e. the script's output) and ``sbatch_<job name>_<id>.out`` (the batch
script itself, with shell tracing) in the job dir.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from nemo_runspec.env.profile import EnvProfile
from nemo_runspec.errors import ConfigError, ExecutionError
from nemo_runspec.execution.env_vars import code_env, split_env_vars
from nemo_runspec.execution.executor import create_executor
from nemo_runspec.execution.runspec_cmd import uses_launch_script
from nemo_runspec.execution.secret_file import SECRET_FILE_NAME
from nemo_runspec.execution.tunnels import default_base_dir
from nemo_runspec.job.settings import (
    bare_metal_env,
    container_image,
    job_slug,
    launch_of,
    profile_values,
)
from nemo_runspec.secrets import redact_text

if TYPE_CHECKING:
    from nemo_run.core.packaging.base import Packager

    from nemo_runspec.env.git_mounts import GitMount
    from nemo_runspec.job.compiled import CompiledJob
    from nemo_runspec.packaging.manifest import PackagingPlan
    from nemo_runspec.slurm.launch_script import LaunchScript
    from nemo_runspec.slurm.profiling import NsysSettings
    from nemo_runspec.slurm.squash import SquashPlan
    from nemo_runspec.spec.models import Runspec

#: Where the compiled job's train config lands in the job dir, as the job sees it.
TRAIN_YAML = "/nemo_run/train.yaml"


@dataclass
class PreparedJob:
    """Everything needed to render or submit one Slurm job."""

    #: each job file is fsynced before sbatch (a sweep's hundreds of point files are not:
    #: they are read after sbatch, and a submission that dies removes them all)
    durable_files: ClassVar[bool] = True

    name: str
    title: str
    exp_id: str
    base_dir: Path
    executor: Any
    script: str
    args: list[str]
    values: dict[str, Any]
    secrets: dict[str, str] = field(default_factory=dict)
    entrypoint: str = "python"
    launch: str = "direct"
    files: dict[str, str] = field(default_factory=dict)
    #: the container image's squash, when the profile sets squash_dir (nemo_runspec.slurm.squash)
    squash: SquashPlan | None = None
    force_squash: bool = False
    """Files written into the job dir before submission (name -> text), e.g. train.yaml."""
    plan: PackagingPlan | None = None
    """What the packager shipped; written to ``packaging.json`` once the job is submitted."""
    mode: str = "batch"
    """``run`` (follow the job once submitted) or ``batch`` (submit and return)."""
    recipe: str | None = None
    """The runspec name (``nano3/pretrain``); recorded in the submission ledger."""
    profile: str | None = None
    """The env.toml profile the job was submitted with (None without one)."""
    env_file: str | None = None
    """The env.toml that profile came from (``nemotron jobs`` reads it again)."""
    git_mounts: list[GitMount] = field(default_factory=list)
    """``${auto_mount:...}`` repositories, cloned on the cluster at submission (nemo_runspec.env.git_mounts)."""
    launch_script: LaunchScript | None = None
    """How the job starts through the runspec's launch script, when it does
    (:class:`nemo_runspec.slurm.launch_script.LaunchScript`; a sweep's array renders it per task)."""
    git_dir: str | None = None
    """Where they are cloned on the cluster (``[cache] git_dir``, else ``<job root>/git-cache``)."""
    compiled: CompiledJob | None = None
    """The :class:`~nemo_runspec.job.CompiledJob` this was prepared from (None for explicit parts)."""

    @property
    def attached(self) -> bool:
        """True when submission follows the job to its end (``--run``)."""
        return self.mode == "run"

    @property
    def is_ray(self) -> bool:
        """True when the job runs as the driver of a Ray cluster (our template)."""
        return self.launch == "ray"

    @property
    def ray_log_dir(self) -> str:
        """Log dir of a Ray job (the template's ``$LOG_DIR``); exists before sbatch."""
        return os.path.join(self.job_dir, "ray", "logs")

    @property
    def tunnel_kind(self) -> str:
        """``local`` or ``ssh``."""
        return self.values.get("tunnel") or "local"

    @property
    def remote_exp_dir(self) -> str:
        """Experiment dir as seen by the cluster."""
        root = (
            os.path.join(str(self.base_dir), "experiments")
            if self.tunnel_kind == "local"
            else str(self.values.get("remote_job_dir") or self.values.get("job_dir"))
        )
        return os.path.join(root, self.title, self.exp_id)

    @property
    def job_dir(self) -> str:
        """Task dir as seen by the cluster (holds code/, logs, secrets file)."""
        return os.path.join(self.remote_exp_dir, self.name)

    @property
    def local_exp_dir(self) -> Path:
        """Experiment dir on the submitting machine."""
        return self.base_dir / "experiments" / self.title / self.exp_id

    @property
    def secret_path(self) -> str | None:
        """Path of the secrets file on the cluster (None without secrets)."""
        return os.path.join(self.job_dir, SECRET_FILE_NAME) if self.secrets else None

    def secret_paths(self) -> list[str]:
        """Every secrets file the job reads (one; a sweep's array has one per point)."""
        return [self.secret_path] if self.secret_path else []

    @property
    def job_name(self) -> str:
        """Slurm job name (prefix + name)."""
        prefix = self.executor.job_name_prefix or ""
        return f"{prefix}{self.name}"

    @property
    def sbatch_path(self) -> str:
        """Where nemo-run writes the sbatch script on the cluster."""
        return os.path.join(self.remote_exp_dir, f"{self.name}_sbatch.sh")


#: exit status of ``--run`` when Ctrl-C's prompt was answered ``c``: the job was cancelled
#: (a detach exits ``128 + signal``, 130 for Ctrl-C, and the job stays in Slurm); docs/cli.md
CANCELLED_EXIT = 4


@dataclass
class SubmittedJob:
    """A submitted job. ``exit_code`` is set when followed to the end (None if detached);
    ``interrupted`` when Ctrl-C stopped following it (the job keeps running)."""

    job_id: str
    job_dir: str
    log_path: str
    sbatch_log_path: str
    sbatch_path: str
    name: str
    state: str = "PENDING"
    exit_code: int | None = None
    prepared: PreparedJob | None = None
    interrupted: bool = False
    #: Slurm's last word on the job while following it: pending reason, node list.
    reason: str = ""
    nodes: str = ""
    #: the Slurm job importing the container image first (nemo_runspec.slurm.squash), if any
    squash_job_id: str | None = None
    #: exit status after an interrupt that detached: 130 for Ctrl-C, 128+N for SIGTERM/SIGHUP
    #: (:data:`CANCELLED_EXIT` once the interrupt cancelled the job)
    interrupt_code: int = 130

    @property
    def returncode(self) -> int:
        """The command's exit status: the job's exit code when followed to the end,
        ``128 + signal`` (130 for Ctrl-C) when an interrupt detached from it,
        :data:`CANCELLED_EXIT` when it cancelled it, else 0 (``--batch``)."""
        if self.exit_code is not None:
            return self.exit_code
        return self.interrupt_code if self.interrupted else 0


def prepare_job(
    job: CompiledJob | None = None,
    packager: Packager | None = None,
    plan: PackagingPlan | None = None,
    *,
    env: Mapping[str, object] | None = None,
    mode: str = "batch",
    runspec: Runspec | None = None,
    script: str | os.PathLike[str] | None = None,
    args: Sequence[str] = (),
    env_vars: Mapping[str, str] | None = None,
    secrets: Mapping[str, str] | None = None,
    startup_commands: Sequence[str] | None = None,
    name: str | None = None,
    base_dir: str | os.PathLike[str] | None = None,
    exp_id: str | None = None,
    dependencies: Sequence[str] | None = None,
) -> PreparedJob:
    """Build the executor and job layout. No file is written, no connection made.

    Two call shapes:

    - ``prepare_job(job, packager, plan)`` for a compiled job: its run
      environment, mode and runspec; the packaged script with
      ``--config /nemo_run/train.yaml`` and the command line's script arguments;
      the plain env vars (plus :func:`~nemo_runspec.execution.code_env`) and the
      secrets of :func:`~nemo_runspec.execution.split_env_vars`; ``job.yaml`` and ``train.yaml``
      (redacted) as job files; ``plan`` for ``packaging.json``.
    - ``prepare_job(env=..., mode=..., runspec=..., packager=..., script=...)``
      with every part explicit.

    ``script`` is the path the job runs (relative to ``<job dir>/code`` where the
    packager extracts code, or absolute on the cluster). ``exp_id`` makes the job
    dir deterministic (``<title>_<suffix>``, no ``_`` in suffix); default is a
    nanosecond timestamp.
    """
    files: dict[str, str] = {}
    script_args: list[str] = [str(a) for a in args]  # {args} of run.cmd
    if job is not None:
        plain, job_secrets = split_env_vars(
            job.job_config, job.run_env, runspec=job.runspec,
            wandb_section=job.sections.get("wandb"), registry=job.registry,
        )
        env, mode, runspec = job.run_env, job.mode, job.runspec
        # No script in the archive (packager = "none"): the path the submitter sees.
        script = (plan.script if plan is not None else None) or str(job.runspec.script_path)
        script_args = [*job.passthrough, *script_args]
        _refuse_secret_arguments(script_args)
        args = ["--config", TRAIN_YAML, *script_args]
        env_vars = {**plain, **code_env(plan), **(env_vars or {})}
        secrets = {**job_secrets, **(secrets or {})}
        files = job.files()
    if script is None:
        raise ExecutionError("prepare_job needs a compiled job or script=...")
    values = profile_values(env)
    name = job_slug(name or (runspec.name if runspec is not None else None) or Path(str(script)).stem)
    title = name
    if exp_id is None:
        exp_id = f"{title}_{time.time_ns()}"
    elif exp_id.rpartition("_")[0] != title:
        raise ExecutionError(f"experiment id {exp_id!r} must look like '{title}_<suffix>'")
    base = Path(base_dir).absolute() if base_dir else default_base_dir(values)
    prepared = PreparedJob(
        name=name, title=title, exp_id=exp_id, base_dir=base, executor=None,
        script=str(script), args=[str(a) for a in args], values=values,
        secrets=dict(secrets or {}), launch=launch_of(runspec), files=files, plan=plan,
        mode=mode, compiled=job, recipe=runspec.name if runspec is not None else None,
        profile=_profile_name(job, env), env_file=_env_file(job, env),
    )
    image = container_image(values, runspec)
    if values.get("executor") == "slurm":
        from nemo_runspec.slurm.squash import plan_squash

        force = bool(job.force_squash) if job is not None else False
        prepared.squash = plan_squash(values, image, force=force)
        prepared.force_squash = force
        if prepared.squash is not None:  # the job runs the .sqsh, after the import job
            values = {**values, "container_image": prepared.squash.path}
            prepared.values = values
    bare_metal = image is None
    plain = dict(env_vars or {})
    if bare_metal and values.get("executor") == "slurm":
        # `python`/`torchrun`/`ray` resolve to the submitting venv through PATH. The
        # entrypoint stays "python": any other value makes nemo-run's torchrun
        # component pass --no-python and drop the interpreter.
        plain = bare_metal_env(plain)
    prepared.executor = create_executor(
        env=values, mode=mode, job_name=name, runspec=runspec, env_vars=plain,
        packager=packager, startup_commands=startup_commands, job_dir=base,
        secret_file=prepared.secret_path, dependencies=dependencies,
    )
    if values.get("git_mounts"):
        _plan_git_mounts(prepared, job, bare_metal=bare_metal)
    nsys = _nsys_settings(values, prepared)
    # (nemo-run pastes the script's path into srun's command line unquoted: a path with
    # a space, a quote or a $ starts through the launch script, which quotes it)
    if uses_launch_script(runspec) or nsys is not None or shlex.quote(prepared.script) != prepared.script:
        use_launch_script(prepared, runspec, script_args, bare_metal=bare_metal, nsys=nsys,
                          train_yaml=TRAIN_YAML, rdzv_id=rendezvous_id(prepared))
    elif values.get("executor") == "slurm" and prepared.launch == "torchrun" and int(prepared.executor.nodes) > 1:
        _torchrun_per_node(prepared)
    if values.get("executor") == "slurm":
        from nemo_runspec.slurm import resilience

        settings = resilience.settings_of(values)
        if settings is not None:
            resilience.apply(prepared.executor, settings, job_dir=prepared.job_dir, values=prepared.values,
                             ray=prepared.is_ray, bare_metal=bare_metal)
    launcher = getattr(prepared.executor, "launcher", None)
    if launcher is not None and hasattr(launcher, "rdzv_id") and launcher.rdzv_id is None:
        # nemo-run draws a random --rdzv-id on every render; one derived from the job itself
        # keeps every dry run byte-identical to what is submitted (but for the experiment id).
        launcher.rdzv_id = rendezvous_id(prepared)
    return prepared


def _nsys_settings(values: Mapping[str, Any], prepared: PreparedJob) -> NsysSettings | None:
    """The job's ``run.profile.nsys`` settings (a Slurm torchrun or direct job), else None."""
    from nemo_runspec.slurm import profiling

    settings = profiling.settings_of(values) if values.get("executor") == "slurm" else None
    if settings is not None and prepared.is_ray:
        raise ConfigError("run.profile.nsys profiles torchrun and direct recipes; this one launches Ray",
                          key="profiling.nsys", hint="profile the Ray workers from the recipe itself")
    return settings


def use_launch_script(prepared: PreparedJob, runspec: Runspec | None, script_args: Sequence[str], *,
                      bare_metal: bool, train_yaml: str, rdzv_id: int, nsys: NsysSettings | None = None) -> None:
    """Start ``prepared`` through the runspec's launch script
    (:mod:`nemo_runspec.slurm.launch_script`); ``train_yaml`` is where the job reads
    its config, ``rdzv_id`` torchrun's rendezvous id."""
    from nemo_runspec.slurm.launch_script import LaunchScript, render

    spec = LaunchScript(runspec=runspec, script=prepared.script, args=tuple(prepared.args),
                        script_args=tuple(script_args), bare_metal=bare_metal, nsys=nsys,
                        train_yaml=train_yaml, rdzv_id=rdzv_id)
    out = render(prepared, spec)
    executor = prepared.executor
    executor.env_vars = {**executor.env_vars, **out.env_vars}
    block = "\n".join(x for x in out.lines if x)
    executor.setup_lines = "\n".join(x for x in (executor.setup_lines or "", block) if x)
    executor.launcher = None  # direct: the launch script starts torchrun itself
    prepared.launch_script = LaunchScript(**{**vars(spec), "lines": block, "env_vars": out.env_vars})
    prepared.script, prepared.args, prepared.entrypoint = out.launch_path, [], "bash"


def _torchrun_per_node(prepared: PreparedJob) -> None:
    """Start a multi-node torchrun job as ``bash -c 'exec torchrun ... "$@"' torchrun SCRIPT ARGS``
    (a direct task, one per node) instead of nemo-run's torchrun component, whose
    ``--node-rank $SLURM_NODEID`` the batch shell expands to node 0's for every node:
    each node's shell reads its own, so the job can use torchrun's static rendezvous
    (:func:`~nemo_runspec.execution.runspec_cmd.slurm_torchrun`). The script and its
    arguments stay separate words (a sweep replaces the config path among them)."""
    from nemo_runspec.execution import runspec_cmd as rc

    executor = prepared.executor
    command = rc.slurm_torchrun('"$@"', nodes=int(executor.nodes),
                                nproc=int(getattr(executor, "torchrun_nproc_per_node", 1) or 1),
                                rdzv_id=rendezvous_id(prepared))
    head = f'export {rc.HEAD_NODE_ENV}="${rc.HEAD_NODE_IP}"'  # the rendezvous address, for srun's tasks
    executor.setup_lines = "\n".join(x for x in (executor.setup_lines or "", head) if x)
    executor.launcher = None  # one task per node (nemo-run set ntasks_per_node=1 for torchrun)
    prepared.args = [f"exec {command}", "torchrun", prepared.script, *prepared.args]
    prepared.script, prepared.entrypoint = "-c", "bash"


def _plan_git_mounts(prepared: PreparedJob, job: CompiledJob | None, *, bare_metal: bool) -> None:
    """Mount each ``${auto_mount:...}`` repository into the container; until submission
    clones it (and knows its commit) the mount shows ``<REF>`` where the commit goes."""
    from nemo_runspec.env import git_mounts

    mounts = git_mounts.from_values(prepared.values.get("git_mounts"))
    if bare_metal:
        raise ConfigError(
            f"mounts: ${{auto_mount:...}} ({mounts[0].url}) mounts a repository into the container, "
            "and this job runs without one", key="mounts",
            hint="set container_image, or clone the repository yourself on bare metal")
    cache = (job.sections.get("cache") if job is not None else None) or {}
    if cache.get("git_dir"):
        git_dir = str(cache["git_dir"])
    elif prepared.tunnel_kind == "local":
        git_dir = str(prepared.base_dir / "git-cache")
    else:
        git_dir = git_mounts.default_git_dir(str(prepared.values.get("remote_job_dir") or prepared.values.get("job_dir")))
    prepared.git_mounts, prepared.git_dir = mounts, git_dir
    prepared.executor.container_mounts = [*(prepared.executor.container_mounts or []),
                                          *(m.placeholder(git_dir) for m in mounts)]


def _refuse_secret_arguments(args: Sequence[str]) -> None:
    """Script arguments are written into the sbatch script (and Slurm's saved job state):
    one that carries a secret is refused, saying how to pass it instead."""
    from nemo_runspec.secrets import secret_arguments

    found = secret_arguments(args)
    if found:
        arg = found[0]
        i = list(args).index(arg)
        if "=" in arg and not arg.startswith("="):
            what = f"script argument {arg.partition('=')[0]}=***REDACTED***"
        elif i > 0 and str(args[i - 1]).startswith("-"):
            what = f"the value of script argument {args[i - 1]}"
        else:
            what = f"script argument {i + 1} ({redact_text(arg)})"
        raise ConfigError(
            f"{what} is a secret; the sbatch script and Slurm's job record would hold it in clear",
            key="--", hint="pass it in the environment instead: the profile's env_vars or an exported "
                           "variable (both reach the job only through its 0600 secrets file)")


def _profile_name(job: CompiledJob | None, env: Mapping[str, object] | None) -> str | None:
    """The profile a job was prepared with: the compiled job's, else ``env`` when it is an
    :class:`~nemo_runspec.env.EnvProfile` (a plain mapping names no profile)."""
    profile = job.profile if job is not None else env
    return profile.name if isinstance(profile, EnvProfile) else None


def _env_file(job: CompiledJob | None, env: Mapping[str, object] | None) -> str | None:
    """The env.toml a job's profile came from (None for a plain mapping)."""
    if job is not None and job.env_file is not None:
        return str(job.env_file.path)
    profile = job.profile if job is not None else env
    return str(profile.path) if isinstance(profile, EnvProfile) and profile.path is not None else None


def rendezvous_id(prepared: PreparedJob) -> int:
    """torchrun's ``--rdzv-id`` for a job, 1..10000: derived from what the job is (its name,
    script, arguments and ``train.yaml``), not from the experiment id each command draws,
    so every dry run shows the id the submitted script will have. Jobs that differ in any
    of these get different ids; two identical ones on one head node already share nemo-run's
    fixed rendezvous port (docs/execution.md, Launchers)."""
    what = "\0".join([prepared.name, prepared.script, *prepared.args, prepared.files.get("train.yaml", "")])
    return int(hashlib.sha256(what.encode()).hexdigest()[:8], 16) % 10000 + 1
