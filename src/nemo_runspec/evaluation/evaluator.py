"""NeMo Evaluator helpers: task selection, W&B injection, the evaluation config and its images
(the images and the launcher check live in :mod:`nemo_runspec.evaluation.launcher`, re-exported here).

An evaluation recipe config is a ``nemo-evaluator-launcher`` run config (the
``execution``, ``deployment``, ``target``, ``evaluation`` and ``export``
sections of that package's format, 0.2.x) plus our own keys, which the
launcher never sees (:data:`LAUNCHER_KEYS`): ``run`` (artifacts, profile),
``tasks`` (which tasks to run), ``launcher_defaults``, and the CPU fallback's
``fallback``/``backend``/``publish``.

Both sides of a job use this module:

- the CLI (``nemotron nano3 eval``, ``nemotron evaluate``) calls
  :func:`prepare_eval_job` on the compiled job: ``--task``/``-t`` flags become
  the ``tasks`` list, env.toml ``[wandb]`` ``project``/``entity`` go into
  ``export.wandb`` (the API key never does: it reaches the job only through the
  secrets path of :func:`nemo_runspec.execution.build_env_vars`, and the
  launcher config names it as ``host:WANDB_API_KEY``), and the container images
  the launcher will start are collected (and, with ``squash_dir`` in the
  profile, planned as ``.sqsh`` imports). ``--dry-run`` shows the result with
  :func:`show_evaluation`.
- the recipe script calls :func:`evaluator_config` on its ``train.yaml``, then
  :func:`compose_with_launcher_defaults` and :func:`save_eval_config`, and
  hands the result to the launcher's ``run_eval``.

The same function builds the config in both places, so the dry run shows what
the job writes to ``<job dir>/eval.yaml`` (``${art:...}`` references are shown
as written; the job resolves them when it starts).

Nothing here imports ``nemotron``; OmegaConf, rich and the launcher are
imported inside the functions that need them.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nemo_runspec.errors import ConfigError

# what eval_launcher holds is part of this module's API too (harness_images is only re-exported)
from nemo_runspec.evaluation.launcher import (
    LAUNCHER_MODULE,
    EvaluatorImage,
    apply_squashed,
    collect_images,
    launcher_available,
    plan_image_squash,
)
from nemo_runspec.evaluation.launcher import harness_images as harness_images
from nemo_runspec.evaluation.tasks import parse_task_flags, select_tasks, wanted_tasks

if TYPE_CHECKING:
    from rich.console import Console

    from nemo_runspec.job.compiled import CompiledJob
    from nemo_runspec.slurm.squash import SquashPlan

#: Top-level keys of an evaluation recipe config that are ours, not the launcher's.
LAUNCHER_KEYS = ("run", "tasks", "launcher_defaults", "fallback", "backend", "publish")
#: The evaluation config the job writes into its job dir (and hands to the launcher).
EVAL_YAML = "eval.yaml"
#: The environment variable that holds the W&B API key in the job.
WANDB_KEY_VAR = "WANDB_API_KEY"
#: The package of NeMo Evaluator's launcher (PyPI ``nemo-evaluator-launcher``).
#: Prefixes of the launcher's env var values that name a variable instead of holding a value.
_REFERENCE_PREFIXES = ("host:", "runtime:")


# --------------------------------------------------------------------------- W&B


def inject_wandb(config: Mapping[str, Any], section: Mapping[str, Any] | None) -> dict[str, Any]:
    """A copy of ``config`` whose ``export.wandb`` takes ``project``/``entity`` from env.toml's
    ``[wandb]`` ``section`` where the config leaves them unset (the config wins).

    Only a config that asks for W&B export (an ``export.wandb`` mapping) gets them,
    and nothing but those two names is copied: never a key or token. ``[wandb]
    mode = "disabled"`` leaves the config as it is.
    """
    out = copy.deepcopy(dict(config))
    section = dict(section or {})
    export = out.get("export")
    wandb = export.get("wandb") if isinstance(export, Mapping) else None
    if not isinstance(wandb, Mapping) or section.get("mode") == "disabled":
        return out
    wandb = dict(wandb)
    for name in ("project", "entity"):
        if wandb.get(name) in (None, "") and section.get(name):
            wandb[name] = str(section[name])
    out["export"] = {**dict(export), "wandb": wandb}
    return out


def wandb_export(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """``export.wandb`` when W&B export is on (a mapping naming both ``project`` and
    ``entity``, which the launcher requires), else None."""
    export = config.get("export")
    wandb = export.get("wandb") if isinstance(export, Mapping) else None
    if isinstance(wandb, Mapping) and wandb.get("project") and wandb.get("entity"):
        return dict(wandb)
    return None


def resolved_export_wandb(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with ``export.wandb.project``/``entity`` resolved when they are
    interpolations (the reference's eval config says ``project: ${run.wandb.project}``).

    Copying the unresolved text into ``run.wandb`` would make ``run.wandb.project``
    refer to itself; a reference that resolves to null means W&B export is off.
    Only these two values are resolved (``${art:...}`` elsewhere stays for the job).
    """
    export = config.get("export")
    wandb = export.get("wandb") if isinstance(export, Mapping) else None
    if not isinstance(wandb, Mapping) or not any(
            isinstance(wandb.get(n), str) and "${" in wandb[n] for n in ("project", "entity")):
        return dict(config)
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    conf = OmegaConf.create(dict(config))
    out = dict(wandb)
    for name in ("project", "entity"):
        if isinstance(out.get(name), str) and "${" in out[name]:
            try:
                value = OmegaConf.select(conf, f"export.wandb.{name}", throw_on_resolution_failure=True)
            except OmegaConfBaseException as exc:
                raise ConfigError(f"cannot resolve export.wandb.{name} = {out[name]!r}: {exc}".splitlines()[0],
                                  key=f"export.wandb.{name}",
                                  hint="set it in the config, or [wandb] in env.toml for ${run.wandb.*}") from None
            out[name] = None if value is None else str(value)
    return {**dict(config), "export": {**dict(export), "wandb": out}}


def _finalize_wandb(config: dict[str, Any]) -> None:
    """W&B export on: ``wandb`` among ``execution.auto_export.destinations`` and the key
    named (never given) in ``export.env_vars``. Off: neither, and no ``export.wandb``."""
    execution = config.get("execution")
    auto = execution.get("auto_export") if isinstance(execution, Mapping) else None
    if isinstance(auto, Mapping):
        dests = [d for d in (auto.get("destinations") or []) if d != "wandb"]
    else:
        dests = [d for d in (auto or []) if d != "wandb"] if isinstance(auto, list) else []
    export = config.get("export")
    if wandb_export(config) is not None:
        dests.append("wandb")
        env_vars = dict(export.get("env_vars") or {})
        env_vars.setdefault(WANDB_KEY_VAR, f"host:{WANDB_KEY_VAR}")
        config["export"] = {**dict(export), "env_vars": env_vars}
    elif isinstance(export, Mapping) and "wandb" in export:
        rest = {k: v for k, v in export.items() if k != "wandb"}
        if rest:
            config["export"] = rest
        else:
            del config["export"]
    if isinstance(execution, Mapping) and (auto is not None or dests):
        new_auto = dict(auto) if isinstance(auto, Mapping) else {}
        new_auto["destinations"] = dests
        config["execution"] = {**dict(execution), "auto_export": new_auto}


def check_no_literal_secrets(config: Any, where: str = "") -> None:
    """Refuse a secret in an evaluation config (the launcher copies it into its scripts,
    its containers' environment and the W&B run): a value under a secret-looking name
    must name a variable (``host:NAME``/``runtime:NAME``), never hold the secret, and
    no value may look like a credential (``hf_...``, ``sk-...``)."""
    from nemo_runspec.secrets import is_secret_name, is_secret_value, looks_like_credential

    if isinstance(config, Mapping):
        for k, v in config.items():
            path = f"{where}.{k}" if where else str(k)
            if isinstance(v, (Mapping, list, tuple)):
                check_no_literal_secrets(v, path)
            elif (isinstance(k, str) and is_secret_name(k) and is_secret_value(v)
                  and not str(v).startswith(_REFERENCE_PREFIXES)):
                raise ConfigError(f"{path} holds a literal secret", key=path,
                                  hint=f"name the variable instead ({k}: host:{k}) and export it where the job runs")
            elif isinstance(v, str) and looks_like_credential(v):
                raise ConfigError(f"{path} looks like a credential", key=path,
                                  hint="name a variable in env_vars (NAME: host:NAME) instead of pasting its value")
    elif isinstance(config, (list, tuple)):
        for i, v in enumerate(config):
            check_no_literal_secrets(v, f"{where}[{i}]")


# --------------------------------------------------------------------------- the config


def _placeholder_art(key: Any, field: Any = "path", *, _root_: Any = None) -> str:
    return f"${{art:{key},{field}}}"


def evaluator_config(script_config: Any, *, resolve_artifacts: bool = True) -> dict[str, Any]:
    """The launcher's run config from an evaluation recipe config (``train.yaml``).

    ``${run.*}`` and other interpolations are resolved (``${art:...}`` too, through
    the artifact registry, unless ``resolve_artifacts`` is false: the dry run keeps
    them as written); :data:`LAUNCHER_KEYS` are dropped; ``evaluation.tasks`` is
    cut to the ``tasks`` selection; W&B export is switched on when ``export.wandb``
    names a project and an entity (and removed otherwise); a literal secret
    anywhere is an error. The launcher's packaged defaults are not merged here
    (:func:`compose_with_launcher_defaults`).
    """
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from nemo_runspec.config.resolvers import register_resolvers

    cfg = script_config if OmegaConf.is_config(script_config) else OmegaConf.create(dict(script_config))
    try:
        if not resolve_artifacts:
            OmegaConf.register_resolver("art", _placeholder_art, replace=True, use_cache=False,
                                        annotation_validation="off")
        else:
            register_resolvers()
        data = OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as exc:
        from nemo_runspec.errors import raised_inside

        cause = raised_inside(exc)
        if cause is not None:
            raise cause from None
        raise ConfigError(f"cannot resolve the evaluation config: {exc}".splitlines()[0]) from None
    finally:
        if not resolve_artifacts:
            register_resolvers()
    assert isinstance(data, dict)
    wanted = wanted_tasks(data)
    out = {k: v for k, v in data.items() if k not in LAUNCHER_KEYS}
    evaluation = out.get("evaluation")
    if isinstance(evaluation, Mapping):
        out["evaluation"] = {**dict(evaluation),
                             "tasks": select_tasks(list(evaluation.get("tasks") or []), wanted)}
    elif wanted:
        raise ConfigError("tasks are selected but the config has no evaluation.tasks", key="tasks")
    _finalize_wandb(out)
    check_no_literal_secrets(out)
    return out


def _packaged_defaults(group: str, option: str) -> dict[str, Any]:
    import importlib.resources

    import yaml

    base = importlib.resources.files(f"{LAUNCHER_MODULE}.configs")
    path = base.joinpath(group, *f"{option}.yaml".split("/"))
    if not path.is_file():
        raise ConfigError(f"nemo-evaluator-launcher has no {group} config {option!r}",
                          key=f"launcher_defaults.{group}",
                          hint=f"see {LAUNCHER_MODULE}/configs/{group}/ in the installed package")
    data = yaml.safe_load(path.read_text()) or {}
    data.pop("defaults", None)
    return data


def _drop_nulls_over_required(ours: Any, base: Any) -> Any:
    """``ours`` without the nulls that would hide a value the launcher marks required (``???``)."""
    if isinstance(ours, Mapping) and isinstance(base, Mapping):
        return {k: _drop_nulls_over_required(v, base.get(k)) for k, v in ours.items()
                if not (v is None and base.get(k) == "???")}
    return ours


def compose_with_launcher_defaults(config: Mapping[str, Any], launcher_defaults: Mapping[str, Any] | None,
                                   ) -> dict[str, Any]:
    """``config`` over the launcher's own packaged defaults, as its Hydra defaults list
    (``execution: slurm/default``, ``deployment: vllm``) would compose them: each named
    file under its section, then ``config`` on top. A ``null`` in ``config`` never
    replaces a value the launcher requires (``???``), so :func:`missing_values` can
    name it. Needs ``nemo_evaluator_launcher`` importable.

    (Not done through Hydra itself: with the Hydra that installs next to OmegaConf 2.4,
    1.4.0rc3, ``execution: slurm/default`` lands under ``execution.slurm``.)
    """
    from omegaconf import OmegaConf

    merged: dict[str, Any] = {}
    for group, option in (launcher_defaults or {}).items():
        if option:
            merged[str(group)] = _packaged_defaults(str(group), str(option))
    ours = _drop_nulls_over_required(dict(config), merged)
    for key, value in ours.items():  # a list replaces a mapping (and back), as in Hydra
        if key in merged and isinstance(value, Mapping) != isinstance(merged[key], Mapping):
            del merged[key]
    out = OmegaConf.to_container(OmegaConf.merge(merged, ours), resolve=False)
    assert isinstance(out, dict)
    return out


def missing_values(config: Any, where: str = "") -> list[str]:
    """Dotted paths of the values still ``???`` (required by the launcher, unset)."""
    found: list[str] = []
    if isinstance(config, Mapping):
        for k, v in config.items():
            path = f"{where}.{k}" if where else str(k)
            found += [path] if v == "???" else missing_values(v, path)
    elif isinstance(config, list):
        for i, v in enumerate(config):
            found += missing_values(v, f"{where}[{i}]")
    return found


def to_yaml(config: Mapping[str, Any]) -> str:
    """Block YAML of a plain config, keys in order (as written to :data:`EVAL_YAML`)."""
    import yaml

    return yaml.safe_dump(dict(config), sort_keys=False, default_flow_style=False, allow_unicode=True)


def save_eval_config(config: Mapping[str, Any], job_dir: str | os.PathLike[str], *,
                     name: str = EVAL_YAML) -> Path:
    """Write ``config`` atomically as ``<job_dir>/eval.yaml``, exactly as the launcher
    gets it (it holds no secret: :func:`check_no_literal_secrets` is applied first,
    and secrets are only named, ``host:NAME``); returns the path."""
    from nemo_runspec.config.jobdir import atomic_write_text

    check_no_literal_secrets(config)
    return atomic_write_text(Path(job_dir) / name, to_yaml(config))


# --------------------------------------------------------------------------- backend


def evaluation_backend(config: Any) -> str:
    """Which backend a config asks for: ``"nemo-evaluator"``, ``"fallback"`` or ``"auto"``.

    The rule of the training recipes (docs/training.md): ``backend: torch`` or
    ``fallback.enabled: true`` -> the fallback; ``backend: native``, no
    ``fallback:`` section or ``fallback.enabled: false`` -> NeMo Evaluator; else
    ``auto``: NeMo Evaluator where the job finds ``nemo_evaluator_launcher``, the
    fallback otherwise.
    """
    backend = str(config.get("backend") or "auto")
    fallback = config.get("fallback")
    enabled = fallback.get("enabled", "auto") if fallback is not None else None
    if backend == "torch" or enabled is True:
        return "fallback"
    if backend == "native" or fallback is None or enabled is False:
        return "nemo-evaluator"
    return "auto"


# --------------------------------------------------------------------------- the CLI side


@dataclass(frozen=True)
class EvalJob:
    """A compiled evaluation job (:attr:`job`) and the imports of its images (:attr:`squash`)."""

    job: CompiledJob
    squash: tuple[tuple[EvaluatorImage, SquashPlan], ...] = ()


def _profile_values(job: CompiledJob) -> dict[str, Any]:
    from nemo_runspec.job.settings import profile_values

    return {} if job.is_local else dict(profile_values(job.run_env))


def prepare_eval_job(job: CompiledJob) -> EvalJob:
    """The compiled job of an evaluation command, made ready to run or show:

    - ``--task``/``-t`` flags (taken out of the script's arguments) are added to
      the config's ``tasks`` selection, and checked against ``evaluation.tasks``;
    - env.toml ``[wandb]`` ``project``/``entity`` fill ``export.wandb``
      (:func:`inject_wandb`); when W&B export is then on, ``run.wandb`` says so,
      which is what makes :func:`~nemo_runspec.execution.build_env_vars` hand the job
      ``WANDB_API_KEY`` through the secrets file (nothing else carries the key);
    - for a Slurm profile with ``squash_dir``, the model-server / proxy / export
      images become their ``.sqsh`` paths (:func:`submit_image_squashes` submits
      the imports).
    """
    from omegaconf import OmegaConf

    tasks, rest = parse_task_flags(list(job.passthrough))
    values = _profile_values(job)
    plans: list[tuple[EvaluatorImage, SquashPlan]] = []

    def update(cfg: Any, *, run_wandb: bool) -> Any:
        data = OmegaConf.to_container(cfg, resolve=False)
        assert isinstance(data, dict)
        if tasks:
            data["tasks"] = [*[t for t in wanted_tasks(data) if t not in tasks], *tasks]
        data = inject_wandb(data, job.sections.get("wandb"))
        wandb = wandb_export(resolved_export_wandb(data)) if run_wandb else None
        if run_wandb and wandb is not None:
            data["run"] = {**dict(data.get("run") or {}),
                           "wandb": {"enabled": True, "project": wandb["project"], "entity": wandb["entity"]}}
        if run_wandb:  # once, from the job config: the task selection is checked here too
            config = evaluator_config(data, resolve_artifacts=False)
            if values.get("squash_dir") and evaluation_backend(data) != "fallback":
                plans.extend(plan_image_squash(collect_images(config, harness=None), values,
                                               force=job.force_squash))
        if plans:
            data = apply_squashed(data, plans)
        return OmegaConf.create(data)

    job_config = update(job.job_config, run_wandb=True)
    train_config = update(job.train_config, run_wandb=False)
    new = dataclasses.replace(job, passthrough=tuple(rest), job_config=job_config, train_config=train_config)
    return EvalJob(job=new, squash=tuple(plans))


def submit_image_squashes(ev: EvalJob) -> list[str]:
    """Submit the ``.sqsh`` import of each evaluator image whose file is not there yet
    (or all with ``--force-squash``); returns the Slurm job ids the evaluation job must
    wait for (``afterok``). Nothing happens for a dry run or a local job."""
    job = ev.job
    if job.dry_run or job.is_local or not ev.squash:
        return []
    from nemo_runspec.slurm.remote import Remote
    from nemo_runspec.slurm.squash import ensure_squashed_image

    shell = Remote.for_profile(_profile_values(job))
    ids = []
    for img, plan in ev.squash:
        job_id = ensure_squashed_image(shell.run, plan, force=job.force_squash)
        if job_id is not None:
            print(f"squashing {img.image} -> {plan.path} in Slurm job {job_id} (log {plan.log_path})", flush=True)
            ids.append(job_id)
    return ids


def show_evaluation(ev: EvalJob, *, console: Console | None = None) -> int:
    """Print the evaluation part of a dry run: the exact ``eval.yaml`` the job hands
    to the launcher (``${art:...}`` as written), W&B export, and the container images
    with their ``.sqsh`` imports. Offline; returns 0."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    out = console or Console(highlight=False)
    job = ev.job
    script = job.script_config()
    config = evaluator_config(script, resolve_artifacts=False)
    defaults = script.get("launcher_defaults")
    defaults = dict(defaults) if defaults is not None else {}
    notes = ["${art:...} references are resolved when the job starts (see Artifacts above)"]
    if launcher_available():
        config = compose_with_launcher_defaults(config, defaults)
        missing = missing_values(config)
        if missing:
            notes.append("still unset (the launcher requires them; set them in the env.toml profile "
                         "or as overrides): " + ", ".join(missing))
    elif defaults:
        notes.append("merged over nemo-evaluator-launcher's packaged defaults ("
                     + ", ".join(f"{k}: {v}" for k, v in defaults.items())
                     + ") when the job starts; the launcher is not installed here")
    out.print("[bold]Evaluation config[/bold] (eval.yaml: what nemo-evaluator-launcher receives)")
    out.print(to_yaml(config), markup=False, highlight=False, soft_wrap=True, end="")
    wandb = wandb_export(config)
    if wandb is not None:
        notes.append(f"W&B export: entity {wandb['entity']}, project {wandb['project']}; the API key "
                     f"reaches the job only as ${WANDB_KEY_VAR} (secrets file on Slurm)")
    else:
        notes.append("W&B export: off (no export.wandb project/entity; env.toml [wandb] fills them)")
    for note in notes:
        out.print(Text(f"note: {note}", style="dim"), soft_wrap=True)
    images = collect_images(config)
    table = Table(title="Container images (started by the launcher)", title_justify="left", expand=False)
    table.add_column("role", style="bold")
    table.add_column("image", overflow="fold")
    table.add_column("set by", style="dim", overflow="fold")
    by_path = {plan.path: (img, plan) for img, plan in ev.squash}
    for img in images:
        shown = img.image or "(the launcher's task registry; not installed here)"
        if img.image in by_path:
            shown = f"{by_path[img.image][0].image} -> {img.image}"
        table.add_row(Text(img.role), Text(shown), Text(img.where or "-"))
    if not images:
        table.add_row("-", "-", "-")
    out.print(table)
    for img, plan in ev.squash:
        out.print(Text(f"squash script for {img.image}", style="bold")
                  + Text(f" (runs first unless {plan.path} exists)"))
        out.print(plan.script, markup=False, highlight=False, soft_wrap=True, end="")
    return 0
