"""The environment a job gets: runspec ``env``, profile ``env_vars``, W&B and Hugging Face.

:func:`build_env_vars` returns it as one ``{name: value}`` dict (the reference
system's call and result); :func:`split_env_vars` (or ``build_env_vars(...,
split=True)``) splits it into plain variables (exported by the batch script) and
secrets (delivered through the 0600 secrets file,
:mod:`nemo_runspec.execution.secret_file`), by the one rule of
:mod:`nemo_runspec.secrets`. Nothing here contacts W&B or the Hub.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nemo_runspec.job.settings import launch_of, lookup, profile_values
from nemo_runspec.secrets import is_secret_env, marked_names

if TYPE_CHECKING:
    from nemo_runspec.artifacts.registry import ArtifactRegistry
    from nemo_runspec.config.tree import ConfigTree
    from nemo_runspec.packaging.manifest import PackagingPlan
    from nemo_runspec.spec.models import Runspec


def wandb_enabled(job_config: ConfigTree | None) -> bool:
    """True when the job logs to W&B: the rule the job itself applies
    (:func:`nemo_runspec.runtime.wandb_switch.wandb_switch`), for the stage its recipe name
    says (:func:`~nemo_runspec.runtime.wandb_switch.stage_of`)."""
    from nemo_runspec.runtime.wandb_switch import stage_of, wandb_switch, wandb_view

    stage = stage_of(lookup(job_config, "run", "recipe", "name"))
    return wandb_switch(wandb_view(job_config), stage) is not None


def _discovered_wandb_section() -> dict[str, Any]:
    try:
        from nemo_runspec.env import get_wandb_config

        return get_wandb_config()
    except Exception:  # noqa: BLE001 - reported where profiles are loaded
        return {}


def wandb_settings(job_config: ConfigTree | None, wandb_section: Mapping[str, object] | None = None) -> dict[str, str]:
    """``WANDB_PROJECT``/``WANDB_ENTITY``/``WANDB_NAME``... for a job that logs to W&B.

    Sources, first wins: the job config's ``run.wandb`` section,
    Megatron-Bridge's ``logger.wandb_project``/``wandb_entity``/``wandb_exp_name``,
    NeMo-RL's ``logger.wandb.project``/``entity``/``name``, then env.toml ``[wandb]`` (``project``, ``entity``); ``[wandb]`` ``mode``,
    ``group`` and ``tags`` become ``WANDB_MODE``/``WANDB_RUN_GROUP``/``WANDB_TAGS``.
    W&B is on only when the job config turns it on (:func:`wandb_enabled`, the job's
    own rule): ``[wandb]`` supplies settings, it does not enable logging.
    The result also holds ``api_key_env``: the name of the variable holding the
    API key (default ``WANDB_API_KEY``). ``wandb_section`` is the ``[wandb]``
    table of the command's env.toml (discovered when None). Never contacts W&B.
    """
    section = dict(_discovered_wandb_section() if wandb_section is None else wandb_section)
    wandb = lookup(job_config, "run", "wandb")
    wandb = wandb if not isinstance(wandb, bool) else None
    out: dict[str, str] = {"api_key_env": str(section.get("api_key_env") or "WANDB_API_KEY")}
    # ("logger", "wandb", KEY): NeMo-RL's logger.wandb section
    for var, keys in (("WANDB_PROJECT", (("wandb", "project"), ("logger", "wandb_project"),
                                         ("logger", "wandb", "project"), ("[wandb]", "project"))),
                      ("WANDB_ENTITY", (("wandb", "entity"), ("logger", "wandb_entity"),
                                        ("logger", "wandb", "entity"), ("[wandb]", "entity"))),
                      ("WANDB_NAME", (("wandb", "name"), ("logger", "wandb_exp_name"), ("logger", "wandb", "name")))):
        for where, *key in keys:
            if where == "wandb":
                value = lookup(wandb, *key) if wandb is not None else None
            elif where == "[wandb]":
                value = section.get(key[0])
            else:
                value = lookup(job_config, where, *key)
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


def _needs_hf(job_config: ConfigTree | None, merged: Mapping[str, str]) -> bool:
    text = repr(job_config)
    return "hf://" in text or "huggingface" in text.lower() or "HF_HOME" in merged


def build_env_vars(
    job_config: ConfigTree | None, env: Mapping[str, object] | None = None, *, split: bool = False, **kwargs: Any,
) -> dict[str, str] | tuple[dict[str, str], dict[str, str]]:
    """The job's environment as one ``{name: value}`` dict, as in the reference system.

    ``build_env_vars(job_config, env)`` merges everything :func:`split_env_vars`
    describes, secrets included (``WANDB_API_KEY``, ``HF_TOKEN`` when forwarded).
    Secrets must not reach :func:`~nemo_runspec.execution.executor.create_executor`'s
    ``env_vars`` (it refuses them): to submit a job, use :func:`split_env_vars`, or
    ``split=True`` here, which returns its ``(plain, secrets)``. ``kwargs`` are
    those of :func:`split_env_vars` (``runspec``, ``environ``, ``wandb_section``,
    ``registry``).
    """
    plain, secrets = split_env_vars(job_config, env, **kwargs)
    if split:
        return plain, secrets
    return {**plain, **secrets}


def split_env_vars(
    job_config: ConfigTree | None, env: Mapping[str, object] | None = None, *, runspec: Runspec | None = None,
    environ: Mapping[str, str] | None = None, wandb_section: Mapping[str, object] | None = None,
    registry: ArtifactRegistry | None = None,
) -> tuple[dict[str, str], dict[str, str]]:
    """Environment of the job, split into ``(plain, secrets)``.

    Merge order (later wins): runspec ``env`` < profile ``env_vars``. W&B settings
    (``WANDB_PROJECT``, ``WANDB_ENTITY``, ``WANDB_NAME``) are added only when the
    job logs to W&B (:func:`wandb_enabled`, the rule the job applies); ``WANDB_API_KEY`` is forwarded from the user's
    environment only then, or when the artifact registry is W&B's. ``HF_TOKEN`` is forwarded from the user's environment
    when it is set and the job refers to Hugging Face (an ``hf://`` path, a
    ``huggingface`` name, or ``HF_HOME`` in the env). ``NEMOTRON_ARTIFACTS_ROOT``
    hands the job the artifact registry's root (:func:`artifacts_root_for_job`).
    No network call is made. Every entry the secret rule calls secret
    (:func:`~nemo_runspec.secrets.is_secret_env`: a secret-looking name, or a
    credential-shaped value such as ``hf_...`` or a URL with a password, under any
    name) goes to ``secrets``.

    ``wandb_section`` and ``registry`` come from the command's env.toml; when
    None they are discovered.
    """
    environ = os.environ if environ is None else environ
    values = profile_values(env)
    merged: dict[str, str] = {}
    root = artifacts_root_for_job(registry)
    if root:
        merged["NEMOTRON_ARTIFACTS_ROOT"] = root
    if runspec is not None:
        merged.update(runspec_env(runspec))
    merged.update({str(k): str(v) for k, v in dict(values.get("env_vars") or {}).items()})
    if launch_of(runspec) == "torchrun":
        # torchrun's agent logs every rendezvous step at INFO (nemo-run's default),
        # which buries the job's own output in --run; env_vars.LOGLEVEL restores it.
        merged.setdefault("LOGLEVEL", "WARNING")

    wandb_registry = bool(root) and root.startswith("wandb://")
    logs = wandb_enabled(job_config)
    if logs or wandb_registry:
        settings = wandb_settings(job_config, wandb_section)
        key_var = settings.pop("api_key_env")
        if not logs:  # the registry only: its key, mode and nothing else
            settings = {k: v for k, v in settings.items() if k == "WANDB_MODE"}
        for var, value in settings.items():
            merged.setdefault(var, value)
        if environ.get(key_var) and "WANDB_API_KEY" not in merged:
            merged["WANDB_API_KEY"] = environ[key_var].replace("$", "$$")  # data: no $ of it expands
    if environ.get("HF_TOKEN") and "HF_TOKEN" not in merged and _needs_hf(job_config, merged):
        merged["HF_TOKEN"] = environ["HF_TOKEN"].replace("$", "$$")

    marked = marked_names(env)  # the profile's secret_env_vars / public_env_vars
    secrets = {k: v for k, v in merged.items() if is_secret_env(k, marked, v)}  # by name or by shape
    plain = {k: v for k, v in merged.items() if k not in secrets}
    return plain, secrets


def runspec_env(runspec: Runspec) -> dict[str, str]:
    """The runspec's ``env`` with ``${oc.env:...}`` resolved here, as the job is built (the one
    rule for ``$``: :mod:`nemo_runspec.dollar`); the rest is the job's shell's."""
    from nemo_runspec.env.file import interpolate

    script = str(runspec.script_path)
    return {str(k): str(interpolate(str(v), ("env", str(k)), lambda _keypath: (script, None)))
            for k, v in runspec.env.items()}


def artifacts_root_for_job(registry: ArtifactRegistry | None = None) -> str | None:
    """The artifact registry root the job must use (``NEMOTRON_ARTIFACTS_ROOT``).

    The job cannot see the submitter's env.toml, so the root resolved here
    (``$NEMOTRON_ARTIFACTS_ROOT``, env.toml ``[artifacts]``, ``$NEMOTRON_HOME/artifacts``)
    is handed over; the W&B backend as ``wandb://ENTITY/PROJECT``. ``registry``
    defaults to the process-wide one.
    """
    from nemo_runspec.artifacts.registry import FsspecBackend, WandbBackend, get_registry

    backend = (registry or get_registry()).backend
    return backend.url if isinstance(backend, (FsspecBackend, WandbBackend)) else None


def code_env(plan: PackagingPlan | None) -> dict[str, str]:
    """Env vars that make the job import the *packaged* code, not an installed copy.

    With a ``src/`` layout in the archive, ``/nemo_run/code/src`` goes first on
    ``PYTHONPATH`` (nemo-run maps ``/nemo_run`` to the job dir without a
    container); otherwise an editable install on a shared filesystem would
    silently run the submitter's live tree instead of the snapshot.
    """
    if plan is None:
        return {}
    script = plan.script or ""
    if plan.kind in ("git", "code", "hybrid", "pattern") and script.startswith("src/"):
        return {"PYTHONPATH": "/nemo_run/code/src:${PYTHONPATH:-}"}
    return {}
