"""Pydantic models of an env.toml profile and of its special sections.

This module imports pydantic, so :mod:`nemo_runspec.env` imports it only inside
the functions that validate (``import nemo_runspec.env`` must stay cheap for
``nemotron --help``). The profile model is :class:`SharedProfileModel` (the keys every
executor reads, and Slurm's and local's) with the keys each backend declares as its own
(its class's ``profile.keys``, read through the registry): :data:`EnvProfileModel` for the
built-ins, :func:`profile_model` with a plug-in's. :data:`nemo_runspec.env.PROFILE_KEYS` is
derived from it.

Validation is strict (no "4" -> 4 coercion): a wrong type is reported, not converted.
pydantic's errors become one-line :class:`~nemo_runspec.errors.EnvFileError` objects
(:mod:`nemo_runspec.env`); cross-field checks raise ``ValueError`` meant for users.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from nemo_runspec import script_values
from nemo_runspec.env import executor_keys
from nemo_runspec.env.executor_keys import executor_problem, ssh_job_dir_problem
from nemo_runspec.env.packager_keys import (
    PACKAGERS,
    PROFILE_KEY_USERS,
    SUB_KEY_USERS,
    SUB_PACKAGERS,
    unused_keys,
    unused_message,
)
from nemo_runspec.env.profiling import ProfilingModel
from nemo_runspec.env.registry import BUILTIN, DEFAULT_EXECUTOR, declared, is_backend

if TYPE_CHECKING:
    from nemo_runspec.env.keys import Key

#: the packager names (declared once: nemo_runspec.env.packager_keys)
PackagerName = Literal[PACKAGERS]  # type: ignore[valid-type]
SubPackagerName = Literal[SUB_PACKAGERS]  # type: ignore[valid-type]

# Slurm --time formats: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS.
_SLURM_TIME = re.compile(
    r"^(?:\d+|\d+:[0-5]?\d|\d+:[0-5]?\d:[0-5]?\d"
    r"|\d+-(?:[01]?\d|2[0-3])(?::[0-5]?\d(?::[0-5]?\d)?)?)$"
)
# A container mount: src:dst or src:dst:flags, each part non-empty.
_MOUNT = re.compile(r"^[^:]+:[^:]+(?::[^:]+)?$")

SLURM_TIME_FORMATS = "MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS"

_STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)

#: profile key -> the kind of batch-script value it holds (nemo_runspec.script_values.KINDS)
SCRIPT_VALUE_KINDS: dict[str, str] = {
    **dict.fromkeys(("account", "partition", "run_partition", "batch_partition", "qos", "user"), "slurm_name"),
    "constraint": "constraint",
    "exclude": "nodelist",
    "gres": "gres",
    "mem": "mem",
    "job_name_prefix": "job_name",
    "container_image": "image",
    **dict.fromkeys(("workdir", "remote_job_dir", "squash_dir"), "path"),  # job_dir: env.value_rules
    "host": "host",
}


def time_limit_seconds(value: str) -> int | None:
    """Seconds of a Slurm ``--time`` value (:data:`SLURM_TIME_FORMATS`); None when it is not one."""
    if not _SLURM_TIME.match(value):
        return None
    days, _, rest = value.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if days:  # D-HH, D-HH:MM, D-HH:MM:SS
        parts += [0] * (3 - len(parts))
        hours, minutes, seconds = parts
        return ((int(days) * 24 + hours) * 60 + minutes) * 60 + seconds
    if len(parts) == 1:  # MM
        return parts[0] * 60
    if len(parts) == 2:  # MM:SS
        return parts[0] * 60 + parts[1]
    return (parts[0] * 60 + parts[1]) * 60 + parts[2]


class SubPackager(BaseModel):
    """One named member of a ``packager = "hybrid"`` profile (``[p.packagers.NAME]``)."""

    model_config = _STRICT

    packager: SubPackagerName
    include_pattern: str | list[str] | None = None
    relative_path: str | None = None
    subpath: str | None = None
    check_uncommitted: bool | None = None
    include_submodules: bool | None = None

    @model_validator(mode="after")
    def _pattern_needs_include(self) -> SubPackager:
        if self.packager == "pattern" and not self.include_pattern:
            raise ValueError('a sub-packager with packager = "pattern" needs include_pattern')
        values = {k: getattr(self, k) for k in SUB_KEY_USERS}
        for key in unused_keys(self.packager, values, sub=True):
            raise ValueError(unused_message(key, values[key], self.packager, sub=True))
        return self


#: sbatch options with a profile key of their own (or set by nemotron itself).
_MANAGED_SBATCH: dict[str, str | None] = {
    **{k: k for k in ("nodes", "ntasks_per_node", "gpus_per_node", "cpus_per_task", "mem", "time",
                      "partition", "account", "qos", "constraint", "exclude", "gres", "exclusive")},
    "gpus": "gpus_per_node", "ntasks": "ntasks_per_node", "n": "ntasks_per_node", "N": "nodes",
    "t": "time", "p": "partition", "A": "account", "job_name": "job_name_prefix",
    "output": None, "error": None, "dependency": None, "open_mode": None,
}


class ResilienceModel(BaseModel):
    """``[PROFILE.resilience]``: restart a long job across time limits, preemption, hangs and bad nodes.

    Present (even empty) turns it on; docs/resilience.md says what happens on each fault.
    """

    model_config = _STRICT

    #: requeues of the job after its first attempt (time limit, preemption, stall, failure)
    max_restarts: int = Field(default=3, ge=0, le=1000)
    #: seconds before the time limit at which Slurm sends the warning signal (``--signal=B:USR1@N``)
    signal_before: int = Field(default=300, ge=1, le=65535)
    #: seconds without a training-step heartbeat after which the watchdog ends the attempt (unset: no watchdog)
    stall_timeout: int | None = Field(default=None, ge=1)
    #: seconds allowed for start-up, the first step (compilation) and each checkpoint write
    startup_timeout: int = Field(default=1800, ge=1)
    #: nodes at most excluded from later attempts (those an attempt failed on)
    max_excluded_nodes: int = Field(default=2, ge=0, le=1000)


class SharedProfileModel(BaseModel):
    """The keys of an env.toml execution profile that the profile model types itself: those
    every executor reads, and the Slurm and local backends' (which they list in their
    ``profile.reads``). :data:`EnvProfileModel` adds the keys the other backends declare.

    Defaults are ``None`` (meaning "not set"); the documented defaults that
    apply when a key is not set are in :data:`PROFILE_DEFAULTS`.
    """

    model_config = _STRICT

    # profile plumbing
    executor: executor_keys.ExecutorKey = None  # a built-in executor name, or an installed plug-in's
    extends: str | None = None
    description: str | None = None
    # Slurm resources
    account: str | None = None
    partition: str | None = None
    run_partition: str | None = None
    batch_partition: str | None = None
    nodes: int | None = Field(default=None, ge=1)
    ntasks_per_node: int | None = Field(default=None, ge=1)
    gpus_per_node: int | None = Field(default=None, ge=0)
    nproc_per_node: int | None = Field(default=None, ge=0)
    cpus_per_task: int | None = Field(default=None, ge=1)
    mem: str | None = None
    time: str | None = None
    exclusive: bool | None = None
    qos: str | None = None
    constraint: str | None = None
    exclude: str | None = None
    gres: str | None = None
    # container and environment
    container_image: str | None = None
    #: "src:dst[:flags]" strings; tables for a backend whose ``profile.mount_tables`` says so (lepton)
    mounts: list[str | dict[str, str]] | None = None
    #: ``${auto_mount:git+URL@REF,/target}`` entries of ``mounts``, as read by env.reference
    git_mounts: list[dict[str, str]] | None = None
    env_vars: dict[str, str] | None = None
    #: env var names that are secret (or not) whatever their name says (docs/env-toml.md, "Secrets")
    secret_env_vars: list[str] | None = None
    public_env_vars: list[str] | None = None
    startup_commands: list[str] | None = None
    # submission
    retries: int | None = Field(default=None, ge=0)
    resilience: ResilienceModel | None = None
    profiling: ProfilingModel | None = None  # nsys around the training command (env/profiling.py)
    job_name_prefix: str | None = None
    srun_args: list[str] | None = None
    sbatch_options: dict[str, str | int | bool] | None = None
    dependency_type: Literal["afterok", "afterany", "afternotok", "after"] | None = None
    # packaging
    packager: PackagerName | None = None
    packager_include_pattern: str | list[str] | None = None
    packager_relative_path: str | None = None
    packager_subpath: str | None = None
    packagers: dict[str, SubPackager] | None = None
    check_uncommitted: bool | None = None
    include_submodules: bool | None = None
    # working directory on the cluster when packager = "none" (the code is already there)
    workdir: str | None = None
    # tunnel
    tunnel: Literal["local", "ssh"] | None = None
    host: str | None = None
    user: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    identity: str | None = None
    remote_job_dir: str | None = None
    job_dir: str | None = None
    # where container images are squashed once into .sqsh files (nemo_runspec.slurm.squash)
    squash_dir: str | None = None
    # Ray (the template's NEMOTRON_RAY_PORT_BASE / NEMOTRON_RAY_TIMEOUT: seconds for all nodes to join)
    ray_port_base: int | None = Field(default=None, ge=1024, le=65000)
    ray_timeout: int | None = Field(default=None, ge=1)
    local_nproc: int | None = Field(default=None, ge=1)  # local execution
    # scale matrix (nemo_runspec.scales) and sweeps (docs/sweeps.md)
    gpu_type: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    precision: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    max_array_size: int | None = Field(default=None, ge=1)
    max_parallel: int | None = Field(default=None, ge=1)
    # how recipe commands treat the profile (the reference's keys): dry_run = true makes every
    # command using it a dry run; detach = true makes --run submit detached, as --batch does
    dry_run: bool | None = None
    detach: bool | None = None

    @field_validator("time")
    @classmethod
    def _slurm_time(cls, v: str | None) -> str | None:
        if v is not None and not _SLURM_TIME.match(v):
            raise ValueError(f"{v!r} is not a Slurm time limit ({SLURM_TIME_FORMATS})")
        return v

    @field_validator("job_name_prefix")
    @classmethod
    def _prefix_not_empty(cls, v: str | None) -> str | None:
        # nemo-run reads an empty prefix as "none given" and builds one from `account`
        # (which may be unset): there is no job name without a prefix.
        if v == "":
            raise ValueError("must not be empty (remove it for the default \"nemotron-\")")
        return v

    @field_validator("git_mounts")
    @classmethod
    def _git_mounts(cls, v: list[dict[str, str]] | None) -> list[dict[str, str]] | None:
        from nemo_runspec.env import git_mounts

        for entry in v or ():  # the same checks as an ${auto_mount:...} entry (keys: url, ref, target)
            git_mounts.parse_spec(f"git+{entry.get('url', '')}@{entry.get('ref', git_mounts.DEFAULT_REF)}",
                                  entry.get("target"))
        return v

    @field_validator("mounts")
    @classmethod
    def _mounts(cls, v: list[str | dict[str, str]] | None) -> list[str | dict[str, str]] | None:
        for i, m in enumerate(v or ()):
            if not isinstance(m, str):  # a mount table (checked by its backend's profile.problem)
                continue
            if not _MOUNT.match(m):
                raise ValueError(f"entry {i} {m!r} must look like src:dst or src:dst:flags")
            for part in m.split(":"):
                reason = script_values.problem("mount_part", part)
                if reason:
                    raise ValueError(f"entry {i}: {reason}")
        return v

    @field_validator(*SCRIPT_VALUE_KINDS)
    @classmethod
    def _script_value(cls, v: str | None, info: ValidationInfo) -> str | None:
        """Values nemo-run pastes into the batch script unquoted (nemo_runspec.script_values)."""
        if v is None:
            return v
        if info.field_name == "container_image" and v.strip().lower() in script_values.DISABLED_IMAGES:
            return v  # no container (see job.settings.container_image)
        return script_values.check(SCRIPT_VALUE_KINDS[info.field_name], v)

    @field_validator("secret_env_vars", "public_env_vars")
    @classmethod
    def _marked_names(cls, v: list[str] | None) -> list[str] | None:
        for name in v or ():
            reason = script_values.problem("env_name", name)
            if reason:
                raise ValueError(f"env var name {reason}")
        return v

    @field_validator("env_vars")
    @classmethod
    def _env_names(cls, v: dict[str, str] | None) -> dict[str, str] | None:
        for name in v or {}:
            reason = script_values.problem("env_name", name)
            if reason:
                raise ValueError(f"env var name {reason}")
        return v

    @field_validator("srun_args")
    @classmethod
    def _srun_args(cls, v: list[str] | None) -> list[str] | None:
        for i, arg in enumerate(v or ()):
            reason = script_values.problem("srun_arg", arg)
            if reason:
                raise ValueError(f"entry {i}: {reason}")
        return v

    @field_validator("sbatch_options")
    @classmethod
    def _no_shadowed_keys(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        # A raw option that duplicates a first-class key would make the sbatch
        # header and the launcher disagree (e.g. --nodes=4 with torchrun --nnodes 2).
        for name in value or {}:
            if not re.fullmatch(r"[a-z][a-z0-9-]*|[A-Za-z]", str(name).lstrip("-")):
                raise ValueError(
                    f"sbatch option {name!r} is not an sbatch option name "
                    "(lower-case letters, digits and '-', e.g. \"gpu-bind\")"
                )
            key = str(name).lstrip("-").replace("-", "_")
            option = value[name]
            if isinstance(option, str) and not isinstance(option, bool):
                reason = script_values.problem("sbatch_value", option)
                if reason:
                    raise ValueError(f"sbatch option {name!r}: {reason}")
            if key in _MANAGED_SBATCH:
                target = _MANAGED_SBATCH[key]
                raise ValueError(
                    f"sbatch option {name!r} is managed by nemotron; "
                    + (f"set the profile key {target!r} instead" if target else "remove it")
                )
            # sbatch (getopt_long) also takes any unambiguous prefix of a long option:
            # "outp" is --output. No sbatch option of its own is such a prefix.
            full = next((m for m in _MANAGED_SBATCH if len(key) > 1 and len(m) > len(key) and m.startswith(key)),
                        None)
            if full is not None:
                target = _MANAGED_SBATCH[full]
                raise ValueError(
                    f"sbatch option {name!r} abbreviates --{full.replace('_', '-')} (sbatch accepts "
                    "abbreviations), which is managed by nemotron; "
                    + (f"set the profile key {target!r} instead" if target else "remove it")
                )
        return value

    @model_validator(mode="after")
    def _cross_field(self, info: ValidationInfo) -> SharedProfileModel:
        # Cross-field rules only apply to the fully merged profile: a parent
        # may leave `host` to its children.
        if not (info.context or {}).get("complete", False):
            return self
        # No `account` rule: a cluster that needs one says so when the job is submitted
        # (sbatch's "Invalid account ..."), and many clusters need none.
        if self.tunnel == "ssh" and not self.host:
            raise ValueError('tunnel = "ssh" requires host (the login node to submit from)')
        if self.tunnel == "ssh" and not (self.remote_job_dir or self.job_dir):
            raise ValueError(ssh_job_dir_problem(self.host, self.user, self.identity))
        if self.resilience is not None and self.retries:
            raise ValueError("retries and resilience both requeue the job; remove retries "
                             "(resilience.max_restarts bounds every restart)")
        if self.resilience is not None and any(
                str(k).lstrip("-") == "signal" for k in (self.sbatch_options or {})):
            raise ValueError("sbatch option 'signal' is set by resilience (resilience.signal_before); remove it")
        if self.resilience is not None and self.time is not None:
            limit = time_limit_seconds(self.time)
            if limit is not None and self.resilience.signal_before >= limit:
                raise ValueError(f"resilience.signal_before ({self.resilience.signal_before} s) must be "
                                 f"below the time limit ({self.time} = {limit} s)")
        if self.packager == "hybrid" and not self.packagers:
            # not reached from env.toml or run.env: env.reference.normalize_merged reads
            # a bare "hybrid" (the reference's form) as the recipe's default packager
            raise ValueError(
                'packager = "hybrid" requires a [PROFILE.packagers.NAME] table per sub-packager'
            )
        if self.packager == "pattern" and not self.packager_include_pattern:
            raise ValueError('packager = "pattern" requires packager_include_pattern')
        if self.packager is not None:  # without one, the recipe's default reads what it uses
            values = {k: getattr(self, k) for k in PROFILE_KEY_USERS}
            for key in unused_keys(self.packager, values):
                raise ValueError(unused_message(key, values[key], self.packager))
        problem = executor_problem(self.executor or DEFAULT_EXECUTOR, self.__dict__)
        if problem:
            raise ValueError(problem)
        return self


def _field(key: Key) -> tuple[object, Any]:
    """A backend's declared key as a field of the profile model: unset by default."""
    from pydantic import AfterValidator

    annotation = key.build() if key.build is not None else key.type
    typed: object = annotation | None  # type: ignore[operator]
    if key.check is not None:
        check = key.check
        typed = Annotated[typed, AfterValidator(lambda v: v if v is None else check(v))]
    return typed, Field(default=None, ge=key.ge, gt=key.gt, le=key.le)


_DOC = """Every key an env.toml execution profile may set: the shared ones
(:class:`SharedProfileModel`) and those the backends declare (their class's ``profile.keys``),
the built-ins' in the registry's order."""


def _with_keys(base: type[SharedProfileModel], names: list[str]) -> type[SharedProfileModel]:
    """``base`` with the keys the backends ``names`` declare that it does not have yet, in
    their order (a key two backends read is declared by both alike; the first is kept)."""
    from pydantic import create_model

    fields: dict[str, tuple[object, Any]] = {}
    for name in names:
        for key, spec in declared(name).keys.items():
            if key not in base.model_fields and key not in fields:
                fields[key] = _field(spec)
    if not fields:
        return base
    return create_model("EnvProfileModel", __base__=base, __module__=__name__, __doc__=_DOC,  # type: ignore[call-overload]
                        **fields)


#: every key an env.toml execution profile may set (the built-in backends' included)
EnvProfileModel: type[SharedProfileModel] = _with_keys(SharedProfileModel, list(BUILTIN))


@functools.cache
def profile_model(executor: str | None = None) -> type[SharedProfileModel]:
    """The model a profile naming ``executor`` is validated with: :data:`EnvProfileModel`, with
    an installed plug-in's own keys when ``executor`` names one."""
    if executor is None or executor in BUILTIN or not is_backend(executor):
        return EnvProfileModel
    return _with_keys(EnvProfileModel, [executor])


class WandbSection(BaseModel):
    """``[wandb]``: Weights & Biases settings shared by every profile."""

    model_config = _STRICT

    entity: str | None = None
    project: str | None = None
    api_key_env: str = "WANDB_API_KEY"
    mode: Literal["online", "offline", "disabled"] | None = None
    tags: list[str] | None = None
    group: str | None = None

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str) -> str:
        return script_values.check("env_name", v)


class ArtifactsSection(BaseModel):
    """``[artifacts]``: where recipe outputs are registered."""

    model_config = _STRICT

    backend: Literal["file", "fsspec", "wandb"] | None = None
    root: str | None = None


class CacheSection(BaseModel):
    """``[cache]``: caches on the submitting machine."""

    model_config = _STRICT

    git_dir: str | None = None
    dir: str | None = None


class CliSection(BaseModel):
    """``[cli]``: CLI preferences."""

    model_config = _STRICT

    default_profile: str | None = None
    #: directories searched for recipe scripts (relative to env.toml), see docs/cli.md
    recipe_dirs: list[str] | None = None


SECTION_MODELS: dict[str, type[BaseModel]] = {
    "wandb": WandbSection,
    "artifacts": ArtifactsSection,
    "cache": CacheSection,
    "cli": CliSection,
}

# Documented defaults of profile keys that have one (applied by EnvProfile.get,
# never written into EnvProfile.values, so "set" and "default" stay distinct).
PROFILE_DEFAULTS: dict[str, object] = {
    "executor": DEFAULT_EXECUTOR,
    "check_uncommitted": True,
    "include_submodules": True,
    "tunnel": "local",
    "dependency_type": "afterok",
    "ray_timeout": 300,
    # what the executor and the SSH tunnel use when a profile leaves them out
    # (execution/executor.py DEFAULT_TIME, DEFAULT_JOB_NAME_PREFIX; SSH's own port)
    "time": "04:00:00",
    "job_name_prefix": "nemotron-",
    "port": 22,
    "retries": 0,
    "dry_run": False,
    "detach": False,
}
