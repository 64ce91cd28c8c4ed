"""Build nemo-run executors from an env.toml profile and a recipe runspec.

Rules (see docs/execution.md for the full key-by-key table):

- The runspec's ``resources`` (nodes, gpus_per_node) are defaults; profile keys win.
- ``partition``: ``run_partition`` for ``--run``, ``batch_partition`` for
  ``--batch``, else ``partition``.
- ``container_image``: the profile's value, else the runspec ``image``. A profile
  that sets ``container_image = ""`` (or ``"none"``) runs bare metal: no pyxis
  flags, the job runs in ``<job dir>/code`` on the nodes' own Python.
- Launch: ``torchrun`` -> nemo-run ``Torchrun`` launcher (one task per node,
  ``--nproc-per-node`` = ``nproc_per_node`` else ``gpus_per_node``; when
  ``gpus_per_node`` is 0 (CPU cluster) it falls back to ``nproc_per_node`` or
  ``ntasks_per_node`` or 1); ``direct`` -> plain ``python script``; ``ray`` is
  handled elsewhere.
- Secrets never reach ``env_vars``: they go to a 0600 file sourced by the setup
  lines (:mod:`nemo_runspec.secret_file`).
- Startup commands run once per node, before the launcher, through
  ``srun --ntasks-per-node=1 --ntasks=$SLURM_JOB_NUM_NODES``; a failure fails the job.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nemo_runspec.errors import ExecutionError
from nemo_runspec.secrets import is_secret_name

DEFAULT_TIME = "04:00:00"
DEFAULT_JOB_NAME_PREFIX = "nemotron-"
_DISABLED = {"", "none", "null"}


def profile_values(env: Any) -> dict[str, Any]:
    """The validated profile keys of ``env`` (an ``EnvProfile`` or a plain mapping)."""
    if env is None:
        return {}
    values = getattr(env, "values", env)
    if callable(values):  # a plain dict's .values method
        values = env
    return {k: v for k, v in dict(values).items() if v is not None}


def job_slug(name: str) -> str:
    """Slug a recipe name for job names: ``nano3/pretrain`` -> ``nano3-pretrain``."""
    slug = re.sub(r"[^A-Za-z0-9.-]+", "-", name).strip("-.").lower()
    return slug or "job"


def _get(obj: Any, *path: str, default: Any = None) -> Any:
    for part in path:
        if obj is None:
            return default
        if isinstance(obj, Mapping):
            obj = obj.get(part)
        else:
            try:
                obj = obj[part]
            except Exception:
                obj = getattr(obj, part, None)
    return default if obj is None else obj


def _wandb_enabled(job_config: Any) -> bool:
    wandb = _get(job_config, "wandb")
    if wandb is None:
        wandb = _get(job_config, "run", "wandb")
    if wandb is False:
        return False
    if wandb is None:
        # Megatron-Bridge configs turn W&B on by naming a project in `logger`.
        return bool(_get(job_config, "logger", "wandb_project"))
    if isinstance(wandb, bool):
        return wandb
    enabled = _get(wandb, "enabled")
    if enabled is not None:
        return bool(enabled)
    return bool(_get(wandb, "project"))


def wandb_settings(job_config: Any) -> dict[str, str]:
    """``WANDB_PROJECT``/``WANDB_ENTITY``/``WANDB_NAME``... for a job that logs to W&B.

    Sources, first wins: the job config's ``wandb`` (or ``run.wandb``) section,
    Megatron-Bridge's ``logger.wandb_project``/``wandb_entity``/``wandb_exp_name``,
    then env.toml ``[wandb]`` (``project``, ``entity``); ``[wandb]`` ``mode``,
    ``group`` and ``tags`` become ``WANDB_MODE``/``WANDB_RUN_GROUP``/``WANDB_TAGS``.
    W&B is on only when the job config turns it on (``logger.wandb_project`` or a
    ``wandb`` section): ``[wandb]`` supplies settings, it does not enable logging.
    The result also holds ``api_key_env``: the name of the variable holding the
    API key (default ``WANDB_API_KEY``). Reads local files only; never contacts W&B.
    """
    section: dict[str, Any] = {}
    try:
        from nemo_runspec.env import find_env_file, get_wandb_config

        path = find_env_file()
        section = get_wandb_config(path) if path else {}
    except Exception:  # noqa: BLE001 - reported where profiles are loaded
        section = {}
    wandb = _get(job_config, "wandb") or _get(job_config, "run", "wandb")
    wandb = wandb if not isinstance(wandb, bool) else None
    out: dict[str, str] = {"api_key_env": str(section.get("api_key_env") or "WANDB_API_KEY")}
    for var, keys in (("WANDB_PROJECT", (("wandb", "project"), ("logger", "wandb_project"), ("[wandb]", "project"))),
                      ("WANDB_ENTITY", (("wandb", "entity"), ("logger", "wandb_entity"), ("[wandb]", "entity"))),
                      ("WANDB_NAME", (("wandb", "name"), ("logger", "wandb_exp_name")))):
        for where, key in keys:
            if where == "wandb":
                value = _get(wandb, key) if wandb is not None else None
            elif where == "[wandb]":
                value = section.get(key)
            else:
                value = _get(job_config, where, key)
            if value not in (None, ""):
                out[var] = str(value)
                break
    for var, key in (("WANDB_MODE", "mode"), ("WANDB_RUN_GROUP", "group")):
        if section.get(key) not in (None, ""):
            out[var] = str(section[key])
    if section.get("tags"):
        tags = section["tags"]
        out["WANDB_TAGS"] = ",".join(tags) if isinstance(tags, (list, tuple)) else str(tags)
    return out


def _needs_hf(job_config: Any, merged: Mapping[str, str]) -> bool:
    text = repr(job_config)
    return "hf://" in text or "huggingface" in text.lower() or "HF_HOME" in merged


def build_env_vars(
    job_config: Any, env: Any, *, runspec: Any = None, environ: Mapping[str, str] | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """Environment of the job, split into ``(plain, secrets)``.

    Merge order (later wins): runspec ``env`` < profile ``env_vars``. W&B settings
    (``WANDB_PROJECT``, ``WANDB_ENTITY``, ``WANDB_NAME``) are added only when the
    job config enables wandb; ``WANDB_API_KEY`` is forwarded from the user's
    environment only then. ``HF_TOKEN`` is forwarded from the user's environment
    when it is set and the job refers to Hugging Face (an ``hf://`` path, a
    ``huggingface`` name, or ``HF_HOME`` in the env). No network call is made.
    Every entry whose name looks secret (:func:`is_secret_name`) goes to ``secrets``.
    """
    environ = os.environ if environ is None else environ
    values = profile_values(env)
    merged: dict[str, str] = {}
    root = artifacts_root_for_job()
    if root:
        merged["NEMOTRON_ARTIFACTS_ROOT"] = root
    if runspec is not None:
        merged.update({k: str(v) for k, v in dict(getattr(runspec, "env", {}) or {}).items()})
    merged.update({str(k): str(v) for k, v in dict(values.get("env_vars") or {}).items()})
    if _launch(runspec) == "torchrun":
        # torchrun's agent logs every rendezvous step at INFO (nemo-run's default),
        # which buries the job's own output in --run; env_vars.LOGLEVEL restores it.
        merged.setdefault("LOGLEVEL", "WARNING")

    if _wandb_enabled(job_config):
        settings = wandb_settings(job_config)
        key_var = settings.pop("api_key_env")
        for var, value in settings.items():
            merged.setdefault(var, value)
        if environ.get(key_var) and "WANDB_API_KEY" not in merged:
            merged["WANDB_API_KEY"] = environ[key_var]
    if environ.get("HF_TOKEN") and "HF_TOKEN" not in merged and _needs_hf(job_config, merged):
        merged["HF_TOKEN"] = environ["HF_TOKEN"]

    plain = {k: v for k, v in merged.items() if not is_secret_name(k)}
    secrets = {k: v for k, v in merged.items() if is_secret_name(k)}
    return plain, secrets


def artifacts_root_for_job() -> str | None:
    """The artifact registry root the job must use (``NEMOTRON_ARTIFACTS_ROOT``).

    The job cannot see the submitter's env.toml, so the root resolved here
    (``$NEMOTRON_ARTIFACTS_ROOT``, env.toml ``[artifacts]``, ``$NEMOTRON_HOME/artifacts``)
    is handed over. None for the W&B backend (it needs no root).
    """
    from nemo_runspec.artifact_registry import FsspecBackend, get_registry

    backend = get_registry().backend
    return backend.url if isinstance(backend, FsspecBackend) else None


def job_env(job_config: Any) -> dict[str, Any]:
    """The merged execution settings (``run.env``) as a plain dict.

    This is what executors and packagers should read: it already applies the
    precedence runspec < recipe YAML ``run.env`` < env.toml profile < CLI
    ``run.env.KEY=...``. Interpolations are kept as text (shell ``${VAR}`` stays
    for the shell).
    """
    from omegaconf import DictConfig, OmegaConf

    run_env = _get(job_config, "run", "env", default={})
    if isinstance(run_env, DictConfig):
        return OmegaConf.to_container(run_env, resolve=False)  # type: ignore[return-value]
    return dict(run_env or {})


def get_startup_commands(env: Any) -> list[str]:
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


def _container_image(values: Mapping[str, Any], runspec: Any) -> str | None:
    if "container_image" in values:
        image = values["container_image"]
        if image is None or str(image).strip().lower() in _DISABLED:
            return None
        return str(image)
    image = getattr(runspec, "image", None) if runspec is not None else None
    return image or None


def bare_metal_python() -> str:
    """Interpreter a job uses without a container: the submitting one.

    Bare-metal jobs run in the environment that submitted them (a shared
    filesystem, or this machine's own Slurm cluster), so the nodes use the same
    venv. Its ``bin`` dir is also put first on the job's ``PATH`` (for
    ``torchrun`` and ``ray``); see :func:`bare_metal_env`.
    """
    import sys

    return sys.executable


def bare_metal_env(env_vars: Mapping[str, str]) -> dict[str, str]:
    """``env_vars`` plus ``PATH`` led by the submitting venv's ``bin`` (unless set)."""
    out = dict(env_vars)
    if "PATH" not in out:
        out["PATH"] = f"{os.path.dirname(bare_metal_python())}:$PATH"
    return out


def _launch(runspec: Any) -> str:
    launch = getattr(getattr(runspec, "run", None), "launch", None) or "direct"
    return "direct" if launch == "python" else launch


def resolve_resources(values: Mapping[str, Any], runspec: Any) -> tuple[int, int]:
    """``(nodes, gpus_per_node)``: profile value, else runspec resources, else (1, 0)."""
    res = getattr(runspec, "resources", None)
    nodes = values.get("nodes", getattr(res, "nodes", 1) if res is not None else 1)
    gpus = values.get("gpus_per_node", getattr(res, "gpus_per_node", 0) if res is not None else 0)
    return int(nodes), int(gpus or 0)


def _partition(values: Mapping[str, Any], mode: str) -> str | None:
    if mode == "run" and values.get("run_partition"):
        return values["run_partition"]
    if mode == "batch" and values.get("batch_partition"):
        return values["batch_partition"]
    return values.get("partition")


def create_executor(
    *,
    env: Any,
    mode: str,
    job_name: str,
    runspec: Any,
    env_vars: Mapping[str, str],
    packager: Any,
    startup_commands: Sequence[str] | None = None,
    job_dir: str | os.PathLike[str] | None = None,
    secret_file: str | None = None,
    dependencies: Sequence[str] | None = None,
    tunnel: Any = None,
) -> Any:
    """Build a ``nemo_run.SlurmExecutor`` (or ``LocalExecutor``) for one job.

    ``env_vars`` must be the *plain* variables only (see :func:`build_env_vars`);
    ``secret_file`` is the path of the secrets file as seen by the job, sourced
    and deleted by the setup lines. ``job_dir`` is the local Experiment base dir
    used to derive a local tunnel's job dir; pass ``tunnel`` to reuse one.
    ``dependencies`` are Slurm job ids this job must wait for
    (``dependency_type``, default ``afterok``).
    """
    import nemo_run as run

    values = profile_values(env)
    for name in env_vars:
        if is_secret_name(name):
            raise ExecutionError(
                f"secret {name} passed as a plain env var",
                hint="pass secrets through build_env_vars()/secret_file, never env_vars",
            )
    launch = _launch(runspec)
    if launch not in ("torchrun", "direct", "ray"):
        raise ExecutionError(f"unknown launch {launch!r}", hint="torchrun, ray or direct")

    nodes, gpus = resolve_resources(values, runspec)
    ntasks = int(values.get("ntasks_per_node") or 1)
    nproc = values.get("nproc_per_node") or (gpus if gpus > 0 else ntasks)
    launcher = run.Torchrun() if launch == "torchrun" else None
    executor_kind = values.get("executor") or "local"
    startup = list(startup_commands if startup_commands is not None else get_startup_commands(env))

    if executor_kind == "local":
        return run.LocalExecutor(
            launcher=launcher,
            ntasks_per_node=int(nproc) if launch == "torchrun" else 1,
            env_vars=dict(env_vars),
        )
    if executor_kind != "slurm":
        raise ExecutionError(f"unknown executor {executor_kind!r}", key="executor",
                             hint="use \"local\" or \"slurm\"")
    if not values.get("account"):
        raise ExecutionError("the slurm executor needs `account`", key="account",
                             hint="add account = \"...\" to the env.toml profile")

    from nemo_runspec.tunnels import build_tunnel

    if tunnel is None:
        from nemo_runspec.slurm import default_base_dir

        tunnel = build_tunnel(values, base_dir=job_dir or default_base_dir(values))

    setup: list[str] = []
    if secret_file:
        from nemo_runspec.secret_file import source_snippet

        setup.append(source_snippet(secret_file))
    if startup and launch != "ray":  # Ray: the template runs them once per node before its raylet
        setup.append(per_node_setup(startup))

    executor = run.SlurmExecutor(
        account=str(values["account"]),
        partition=_partition(values, mode),
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
        container_image=_container_image(values, runspec),
        container_mounts=list(values.get("mounts") or []),
        additional_parameters=dict(values.get("sbatch_options") or {}) or None,
        srun_args=list(values.get("srun_args") or []) or None,
        dependencies=[],
        dependency_type=str(values.get("dependency_type") or "afterok"),
        setup_lines="\n".join(setup) or None,
        tunnel=tunnel,
        packager=packager,
        launcher=launcher,
        env_vars={k: shell_value(v) for k, v in env_vars.items()},
        retries=int(values.get("retries") or 0),
        poll_estimated_start_time=False,
    )
    if launch == "torchrun":
        executor.torchrun_nproc_per_node = int(nproc)
    if launch == "ray":
        from nemo_runspec.ray_slurm import configure_ray_executor

        configure_ray_executor(executor, profile=values, python=bare_metal_python(),
                               pre_start_commands=startup)
    if dependencies:
        executor.dependencies = [_as_handle(d) for d in dependencies]
    return executor


_SHELL_SAFE = re.compile(r"[A-Za-z0-9_./:,@%+=${}\-]*")


def shell_value(value: Any) -> str:
    """Make an env value safe for nemo-run's unquoted ``export KEY=value`` line.

    Plain words (and ``$VAR`` references) stay as they are; anything else is
    double-quoted so spaces and shell characters survive but ``$VAR`` still expands.
    """
    text = str(value)
    if _SHELL_SAFE.fullmatch(text):
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`")
    return f'"{escaped}"'


def _as_handle(job_id: str) -> str:
    """nemo-run expects TorchX handles for dependencies; wrap a bare Slurm job id."""
    return job_id if "://" in str(job_id) else f"slurm_tunnel://nemo_run/{job_id}"


# --------------------------------------------------------------------------- local runs


def visible_gpus(environ: Mapping[str, str] | None = None) -> int:
    """GPUs this machine offers, without importing torch.

    ``CUDA_VISIBLE_DEVICES`` wins when set (empty means none); otherwise the
    number of ``nvidia-smi -L`` lines; 0 when there is no driver.
    """
    import shutil
    import subprocess

    environ = os.environ if environ is None else environ
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"])
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def local_nproc(run_env: Mapping[str, Any], launch: str, *, gpus: int | None = None) -> int:
    """Processes for a local torchrun: one per GPU, else the CPU fallback.

    With GPUs: ``min(gpus_per_node, visible GPUs)`` (all visible when
    ``gpus_per_node`` is unset). Without a GPU: ``local_nproc`` (profile key or
    ``run.env.local_nproc``), default 1 — a CPU fallback so recipes still run
    on a laptop. ``ray``/``direct`` recipes always run as one process.
    """
    if launch != "torchrun":
        return 1
    gpus = visible_gpus() if gpus is None else gpus
    if gpus > 0:
        wanted = int(run_env.get("nproc_per_node") or run_env.get("gpus_per_node") or gpus)
        return max(1, min(wanted, gpus))
    return max(1, int(run_env.get("local_nproc") or 1))


def local_command(script_path: str, train_yaml: str, passthrough: Sequence[str], *,
                  launch: str, nproc: int = 1) -> list[str]:
    """The command that runs a recipe script here: torchrun, or plain python.

    A single process needs no launcher (and torchrun would add its own
    traceback to every failure), so ``nproc == 1`` runs plain python.
    """
    import sys

    if launch == "torchrun" and nproc > 1:
        launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                    f"--nproc-per-node={nproc}"]
    else:
        launcher = [sys.executable]
    return [*launcher, str(script_path), "--config", str(train_yaml), *passthrough]


def execute_local(runspec: Any, job_config: Any, *, passthrough: Sequence[str] = (),
                  job_dir: str | os.PathLike[str] | None = None) -> int:
    """Run a recipe on this machine in a staged job dir; return its exit code.

    The job dir (``job.yaml``, ``train.yaml``) is created atomically; startup
    commands run once, before the launcher (never once per worker); the script
    runs with the job dir as cwd and ``NEMOTRON_JOB_DIR`` set. Env vars: the
    runspec's ``env``, then ``run.env.env_vars`` (secrets stay in memory, this
    is the user's own machine).
    """
    import subprocess
    import sys

    from nemo_runspec.config import (
        extract_train_config,
        generate_job_dir,
        save_configs,
        staged_job_dir,
    )

    run_env = _get(job_config, "run", "env", default={}) or {}
    launch = _launch(runspec)
    train_config = extract_train_config(job_config, for_remote=True)
    final = Path(job_dir) if job_dir else generate_job_dir(runspec.name)
    with staged_job_dir(final) as staging:
        save_configs(job_config, train_config, staging)
    env = dict(os.environ)
    env.update({str(k): str(v) for k, v in (getattr(runspec, "env", None) or {}).items()})
    env.update({str(k): str(v) for k, v in (run_env.get("env_vars") or {}).items()})
    env["NEMOTRON_JOB_DIR"] = str(final)
    print(f"job dir: {final}", file=sys.stderr)
    for cmd in run_env.get("startup_commands") or []:
        code = subprocess.call(["bash", "-c", str(cmd)], cwd=final, env=env)
        if code != 0:
            raise ExecutionError(f"startup command failed with exit code {code}: {cmd}",
                                 key="startup_commands")
    nproc = local_nproc(run_env, launch)
    cmd = local_command(str(runspec.script_path), str(final / "train.yaml"), passthrough,
                        launch=launch, nproc=nproc)
    try:
        return subprocess.call(cmd, cwd=final, env=env)
    except OSError as exc:
        raise ExecutionError(f"could not start {cmd[0]}: {exc}") from exc


def code_env(plan: Any) -> dict[str, str]:
    """Env vars that make the job import the *packaged* code, not an installed copy.

    With a ``src/`` layout in the archive, ``/nemo_run/code/src`` goes first on
    ``PYTHONPATH`` (nemo-run maps ``/nemo_run`` to the job dir without a
    container); otherwise an editable install on a shared filesystem would
    silently run the submitter's live tree instead of the snapshot.
    """
    script = str(getattr(plan, "script", "") or "")
    if getattr(plan, "kind", None) in ("git", "code", "hybrid", "pattern") and script.startswith("src/"):
        return {"PYTHONPATH": "/nemo_run/code/src:${PYTHONPATH:-}"}
    return {}


def local_preview(runspec: Any, job_config: Any, passthrough: Sequence[str] = ()) -> str:
    """The local command line :func:`execute_local` would run (job dir not yet known)."""
    run_env = _get(job_config, "run", "env", default={}) or {}
    launch = _launch(runspec)
    cmd = local_command(str(runspec.script_path), "<job dir>/train.yaml", passthrough,
                        launch=launch, nproc=local_nproc(run_env, launch))
    return " ".join(shlex.quote(c) if c != "<job dir>/train.yaml" else c for c in cmd)
