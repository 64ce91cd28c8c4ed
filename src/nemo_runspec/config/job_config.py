"""The job config: train config + a ``run:`` section with execution settings and provenance.

``run.env`` is merged from four layers, later wins (one documented precedence)::

    runspec resources  <  recipe YAML run.env  <  env.toml profile  <  command line

- runspec: ``resources.nodes``, ``resources.gpus_per_node`` and ``image`` (as
  ``container_image``), labelled ``runspec <script>``;
  (file paths in labels are relative to the current directory when below it)
- recipe YAML: the config's own ``run.env`` (labelled ``config <file>``, the
  file of the ``defaults:`` chain that set the key);
- env.toml: ``env_profile.values`` (labelled with ``str(env_profile.sources[key])``,
  e.g. ``env.toml:12 [dev]``);
- command line: ``run.env.KEY=v`` overrides from ``ctx.overrides`` (``command line``).

Mapping values (``env_vars``) are merged key by key; other values are replaced.
``run.env_sources`` maps every top-level key, and every key nested in a mapping
value (``env_vars.HF_HOME``), to the label of the layer that set it last.

Secrets stay in clear in the returned object (the executor needs them); only
:func:`nemo_runspec.config.jobdir.save_configs` writes, and it redacts.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from nemo_runspec.config.credential_values import not_secret_values, warn_credential_shaped  # noqa: F401 - their old home
from nemo_runspec.config.provenance import collect_provenance
from nemo_runspec.dollar import omegaconf_escape
from nemo_runspec.env.file import interpolate
from nemo_runspec.env.resources import drop_shadowed_alias
from nemo_runspec.env.validation import validate_run_env
from nemo_runspec.errors import ConfigError
from nemo_runspec.secrets import is_secret_name, is_secret_value

if TYPE_CHECKING:
    from nemo_runspec.cmdline.context import GlobalContext
    from nemo_runspec.env.profile import EnvProfile
    from nemo_runspec.spec.models import Runspec

CLI_LABEL = "command line"
# Bookkeeping only the launcher reads; extract_train_config drops these.
LAUNCHER_ONLY_KEYS = ("env_sources", "provenance", "cli", "dry_run")


def _plain(value: object) -> Any:
    """Make ``value`` storable in OmegaConf (Paths and tuples from env.toml models)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _drop_sources(sources: dict[str, str], path: str) -> None:
    for k in [k for k in sources if k == path or k.startswith(path + ".")]:
        del sources[k]


def _label_leaves(sources: dict[str, str], value: object, path: str, label: str) -> None:
    sources[path] = label
    if isinstance(value, dict):
        for k, v in value.items():
            _label_leaves(sources, v, f"{path}.{k}", label)


def _merge_layer(
    env: dict[str, Any],
    sources: dict[str, str],
    layer: Mapping[str, Any],
    label: Callable[[str], str],
    prefix: str = "",
) -> None:
    """Merge ``layer`` into ``env`` (mappings key by key), recording labels."""
    for k, v in layer.items():
        k = str(k)
        path = f"{prefix}{k}"
        v = _plain(v)
        if isinstance(v, dict) and isinstance(env.get(k), dict):
            sources[path] = label(path)
            _merge_layer(env[k], sources, v, label, prefix=f"{path}.")
        else:
            env[k] = copy.deepcopy(v)
            _drop_sources(sources, path)
            _label_leaves(sources, v, path, label(path))


def _cli_env_ops(overrides: list[str], run: object = None) -> list[Any]:
    """The overrides that touch ``run.env`` (parsed), in our spelling: ``run.nodes=8``
    is ``run.env.nodes=8`` unless ``run`` (the config's run section) has ``nodes``,
    ``run.env.container`` is ``run.env.container_image``, and an ``env_vars`` list
    of ``NAME=value`` strings is a table (:mod:`nemo_runspec.env.reference`)."""
    from nemo_runspec.config.overrides import canonical, parse_override
    from nemo_runspec.env.reference import env_vars_table, normalize_layer

    ops = []
    for raw in overrides:
        ov = canonical(parse_override(raw), run)
        if not (ov.path[:2] == ("run", "env") or ov.path == ("run",)):
            continue

        def where(_keypath: tuple[str, ...], raw: str = raw) -> tuple[str | None, int | None]:
            return f"override {raw!r}", None

        value = interpolate(ov.value, ov.path[2:], where)  # the one rule for $ (nemo_runspec.dollar)
        if ov.path[2:] == ("env_vars",) and isinstance(value, list):
            value = env_vars_table(value, table="run.env", where=where)
        elif ov.path == ("run", "env") and isinstance(value, dict):
            value, _ = normalize_layer(value, table="run.env", where=where, notes=[])
        elif ov.path == ("run",) and isinstance(value, dict) and isinstance(value.get("env"), dict):
            value = {**value, "env": normalize_layer(value["env"], table="run.env", where=where, notes=[])[0]}
        ops.append(ov if value is ov.value else dataclasses.replace(ov, value=value))
    return ops


def _apply_cli(env: dict[str, Any], sources: dict[str, str], ops: list[Any]) -> dict[str, Any]:
    for ov in ops:
        if len(ov.path) <= 2:  # the whole run.env (or run) replaced or deleted
            value = ov.value
            if len(ov.path) == 1 and ov.op != "delete":
                if not (isinstance(value, dict) and "env" in value):
                    continue  # run={...} without env leaves the execution settings alone
                value = value["env"]
            env = {}
            sources.clear()
            if ov.op != "delete" and isinstance(value, dict):
                _merge_layer(env, sources, value, lambda _p: CLI_LABEL)
            continue
        rel = ov.path[2:]
        node = env
        for seg in rel[:-1]:
            if not isinstance(node.get(seg), dict):
                if ov.op == "delete":
                    node = None
                    break
                node[seg] = {}
            node = node[seg]
        dotted = ".".join(rel)
        if ov.op == "delete":
            if node is not None and rel[-1] in node:
                del node[rel[-1]]
            _drop_sources(sources, dotted)
            continue
        node[rel[-1]] = _plain(copy.deepcopy(ov.value))
        _drop_sources(sources, dotted)
        for i in range(1, len(rel)):
            sources[".".join(rel[:i])] = CLI_LABEL
        _label_leaves(sources, node[rel[-1]], dotted, CLI_LABEL)
    return env


def _show(p: str | os.PathLike[str]) -> str:
    """``p`` relative to the current directory when below it, else as is."""
    try:
        return str(Path(p).resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(p)


def _config_label(train_config: DictConfig, ctx: GlobalContext | None) -> Callable[[str], str]:
    from nemo_runspec.config.loader import config_info

    info = config_info(train_config)
    if info is None:
        name = (ctx.config if ctx is not None else None) or "recipe config"
        return lambda _path: f"config {name}"

    def label(path: str) -> str:
        top = path.split(".", 1)[0]
        return f"config {_show(info.env_files.get(top, info.path))}"

    return label


def _profile_label(env_profile: EnvProfile) -> Callable[[str], str]:
    sources = dict(env_profile.sources)
    default = f"env.toml [{env_profile.name}]"

    def label(path: str) -> str:
        src = sources.get(path) or sources.get(path.split(".", 1)[0])
        return str(src) if src is not None else default

    return label


def _said(text: str) -> bool:
    """True the first time ``text`` is passed (a pipeline compiles many jobs: say things once)."""
    if text in _SAID:
        return False
    _SAID.add(text)
    return True


_SAID: set[str] = set()


def _tell(kind: str, text: str) -> None:
    if _said(f"{kind}: {text}"):
        print(f"{kind}: {text}", file=sys.stderr)


_RUN_WANDB_REF = re.compile(r"\$\{[^}]*\brun\.wandb\b")


def _refers_to_run_wandb(obj: object) -> bool:
    if isinstance(obj, dict):
        return any(_refers_to_run_wandb(v) for v in obj.values())
    if isinstance(obj, list):
        return any(_refers_to_run_wandb(v) for v in obj)
    return isinstance(obj, str) and bool(_RUN_WANDB_REF.search(obj))


def _run_wandb(data: dict[str, Any], run: dict[str, Any], section: Mapping[str, Any] | None) -> None:
    """Fill ``run.wandb`` from env.toml's ``[wandb]`` when the config uses it.

    The reference's recipe configs say ``logger.wandb_project: ${run.wandb.project}``.
    ``run.wandb`` is made (every ``[wandb]`` key, ``null`` when not set, so such a
    reference resolves to null, i.e. no W&B, without a ``[wandb]`` section) only when
    the config refers to ``${run.wandb...}`` or has a ``run.wandb`` of its own
    (which wins key by key): a ``[wandb]`` section alone never turns W&B on.
    """
    own = run.get("wandb")
    if own is None and not _refers_to_run_wandb(data):
        return
    if own is not None and not isinstance(own, dict):
        return  # run.wandb: false and the like are the config's own business
    from nemo_runspec.env.model import WandbSection

    filled: dict[str, Any] = dict.fromkeys(WandbSection.model_fields)
    filled.update({k: _plain(v) for k, v in dict(section or {}).items()})
    filled.update(own or {})
    run["wandb"] = filled


def _synonym_refs() -> re.Pattern[str]:
    from nemo_runspec.env.reference import SYNONYMS

    return re.compile(r"\brun\.env\.(" + "|".join(map(re.escape, SYNONYMS)) + r")\b(?![\w-])")


def rewrite_env_synonyms(obj: object, notes: list[Any], path: str = "") -> Any:
    """``${run.env.container}`` (the reference's name, which its eval config uses for
    ``deployment.image``) rewritten to ``${run.env.container_image}``, the one name
    ``run.env`` holds here; the same for every synonym of
    :data:`nemo_runspec.env.reference.SYNONYMS`. Only text inside ``${...}`` is changed;
    each rewritten value leaves a note."""
    if isinstance(obj, dict):
        return {k: rewrite_env_synonyms(v, notes, f"{path}.{k}" if path else str(k)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [rewrite_env_synonyms(v, notes, f"{path}[{i}]") for i, v in enumerate(obj)]
    if not isinstance(obj, str) or "${" not in obj:
        return obj
    from nemo_runspec.env.reference import SYNONYMS, Note

    refs = _synonym_refs()
    new = re.sub(r"\$\{[^}]*\}", lambda inner: refs.sub(lambda m: f"run.env.{SYNONYMS[m.group(1)]}",
                                                         inner.group(0)), obj)
    if new != obj:
        notes.append(Note(f"{path}: {obj} is read as {new} (run.env holds the reference's "
                          "synonyms under our names)"))
    return new


def _yaml_where(train_config: DictConfig) -> Callable[[tuple[str, ...]], tuple[str | None, int | None]]:
    from nemo_runspec.config.loader import config_info

    info = config_info(train_config)
    if info is None:
        return lambda _keypath: ("recipe config", None)
    return lambda keypath: (_show(info.env_files.get(keypath[0], info.path) if keypath else info.path), None)


def effective_mode(mode: str, dry_run: bool, env: Mapping[str, Any],
                   sources: Mapping[str, str]) -> tuple[str, bool]:
    """``(mode, dry_run)`` of a job after the run environment's ``dry_run`` and ``detach``.

    ``dry_run = true`` (env.toml profile, recipe YAML or ``run.env.dry_run=true``)
    makes the command a dry run; ``detach = true`` makes ``--run`` submit detached,
    as ``--batch`` does. ``false`` changes nothing: the command line's ``-d`` and
    ``--batch`` still apply. Each change is said once on stderr, with where it came from.
    """
    if env.get("dry_run") is True and not dry_run:
        dry_run = True
        _tell("note", f"dry_run = true ({sources.get('dry_run', 'run.env')}): a dry run; "
                      "nothing runs or is submitted")
    if env.get("detach") is True and mode == "run":
        mode = "batch"
        _tell("note", f"detach = true ({sources.get('detach', 'run.env')}): --run submits detached, "
                      "as --batch does")
    return mode, dry_run


def build_job_config(
    train_config: DictConfig,
    ctx: GlobalContext | None,
    recipe_name: str,
    script_path: str | os.PathLike[str],
    argv: list[str] | None = None,
    *,
    env_profile: EnvProfile | Mapping[str, object] | None = None,
    runspec: Runspec | None = None,
    wandb_section: Mapping[str, Any] | None = None,
) -> DictConfig:
    """Return ``train_config`` plus the ``run:`` section of a job (see module docstring).

    ``run`` keeps every key the recipe YAML had (``run.data`` ...) and adds
    ``mode, profile, dry_run, recipe{name, script}, env, env_sources,
    cli{argv, config, overrides, passthrough}, provenance``, and ``wandb`` (env.toml's
    ``[wandb]``, passed as ``wandb_section``) when the config refers to
    ``${run.wandb...}``. ``ctx`` is the
    :class:`~nemo_runspec.cmdline.context.GlobalContext` whose overrides were
    already applied to ``train_config`` by ``parse_config``. ``mode`` and
    ``dry_run`` are the command line's, changed by ``detach``/``dry_run`` in the
    run environment (:func:`effective_mode`). The reference system's forms
    (``container``, ``env_vars`` lists, ``run.nodes=8``, a bare ``packager = "hybrid"``)
    are read as ours (:mod:`nemo_runspec.env.reference`); what is worth a warning is
    said once on stderr.
    """
    from nemo_runspec.config.loader import config_info
    from nemo_runspec.env.profile import EnvProfile
    from nemo_runspec.env.reference import Note, normalize_layer, normalize_merged
    from nemo_runspec.env.validation import rename_in_error
    from nemo_runspec.errors import EnvFileError

    profile = EnvProfile.read(env_profile, ctx.profile if ctx is not None else None)  # also a dict or DictConfig
    data = OmegaConf.to_container(train_config, resolve=False)
    assert isinstance(data, dict)
    notes: list[Note] = list(profile.notes) if profile is not None else []
    data = rewrite_env_synonyms(data, notes)
    run = data.get("run")
    if run is None:
        run = {}
    if not isinstance(run, dict):
        raise ConfigError(f"'run' must be a mapping, not a {type(run).__name__}", key="run")
    yaml_env = run.get("env") or {}
    if not isinstance(yaml_env, dict):
        raise ConfigError(f"'run.env' must be a mapping, not a {type(yaml_env).__name__}", key="run.env")
    overrides = list(ctx.overrides) if ctx is not None else []
    cli_ops = _cli_env_ops(overrides, run)  # first: a bad value there is the override's, not the YAML's
    yaml_env, yaml_renamed = normalize_layer(interpolate(yaml_env, (), _yaml_where(train_config)),
                                             table="run.env", where=_yaml_where(train_config), notes=notes)

    script = Path(script_path).expanduser().resolve()
    env: dict[str, Any] = {}
    sources: dict[str, str] = {}
    if runspec is not None:
        layer: dict[str, Any] = {key: value for key, value in (("nodes", runspec.resources.nodes),
                                                                ("gpus_per_node", runspec.resources.gpus_per_node))
                                 if value is not None}
        spec_script = _show(runspec.script_path)
        if runspec.image:  # ${oc.env:USER} in it resolved here (the reference's recipes)
            layer["container_image"] = interpolate(runspec.image, ("image",), lambda _k: (spec_script, None))
        _merge_layer(env, sources, layer, lambda _p: f"runspec {spec_script}")
    _merge_layer(env, sources, yaml_env, _config_label(train_config, ctx))
    if profile is not None:
        values = dict(profile.values)
        values.pop("extends", None)  # how the profile was assembled, not a setting
        _merge_layer(env, sources, values, _profile_label(profile))
    env = _apply_cli(env, sources, cli_ops)
    drop_shadowed_alias(env, sources, winner=CLI_LABEL)
    kept = normalize_merged(env, table="run.env", notes=notes,
                            where=lambda keypath: (sources.get(".".join(keypath)), None))
    for key in set(env) - set(kept):
        _drop_sources(sources, key)
    env = kept
    for note in notes:
        if note.warn:
            _tell("warning", str(note))

    try:
        validate_run_env(env, sources)
    except EnvFileError as exc:  # about run.env.container_image where the YAML wrote container
        top = (exc.key or "").split(".", 1)[0]
        if top in yaml_renamed and str(sources.get(top, "")).startswith("config "):
            raise rename_in_error(exc, yaml_renamed) from None
        raise

    info = config_info(train_config)
    profile_name = ctx.profile if ctx is not None else None
    if profile_name is None and profile is not None:
        profile_name = profile.name or None
    mode, dry_run = effective_mode(ctx.mode if ctx is not None else "local",
                                   ctx.dry_run if ctx is not None else False, env, sources)
    _run_wandb(data, run, wandb_section)
    run.update(
        mode=mode,
        profile=profile_name,
        dry_run=dry_run,
        recipe={"name": recipe_name, "script": str(script)},
        env=omegaconf_escape(env),  # shell text, never OmegaConf's: ${HOME} stays ${HOME}
        env_sources=dict(sorted(sources.items())),
        cli=omegaconf_escape({  # the command line as typed: ${HOME} in it is text
            "argv": list(argv if argv is not None else ctx.argv if ctx is not None else []),
            "config": info.name if info is not None else ctx.config if ctx is not None else None,
            "overrides": overrides,
            "passthrough": list(ctx.passthrough) if ctx is not None else [],
        }),
        provenance=collect_provenance(script),
    )
    data["run"] = run
    return OmegaConf.create(data)


def _strip_secrets(obj: object, path: str = "", dropped: list[str] | None = None) -> Any:
    """Drop secret-named entries holding literal values (references like ``${oc.env:X}`` stay).

    The dotted paths of what was dropped are appended to ``dropped``.
    """
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            where = f"{path}.{k}" if path else str(k)
            if isinstance(k, str) and is_secret_name(k) and is_secret_value(v):
                if dropped is not None:
                    dropped.append(where)
                continue
            out[k] = _strip_secrets(v, where, dropped)
        return out
    if isinstance(obj, list):
        return [_strip_secrets(v, f"{path}[{i}]", dropped) for i, v in enumerate(obj)]
    return obj


def extract_train_config(job_config: DictConfig, *, for_remote: bool = False) -> DictConfig:
    """The config the training script reads, from a job config.

    Drops the launcher-only bookkeeping ``run.env_sources``, ``run.provenance``,
    ``run.cli`` and ``run.dry_run``. Keeps every other key, including the
    ``run`` keys a recipe reads (``run.data`` artifact refs, ``run.env`` with
    the merged execution settings, ``run.mode``, ``run.profile``,
    ``run.recipe``). With ``for_remote=True`` (the file is shipped to the
    cluster) secret-named entries holding literal values are removed
    everywhere, so a script never reads a redacted placeholder as a credential;
    secrets reach the job as environment variables through the executor.
    References such as ``${oc.env:HF_TOKEN}`` are kept. Interpolations are not
    resolved.
    """
    data = OmegaConf.to_container(job_config, resolve=False)
    assert isinstance(data, dict)
    return OmegaConf.create(train_data(data, for_remote=for_remote))


def train_data(data: dict[str, Any], *, for_remote: bool = False) -> dict[str, Any]:
    """:func:`extract_train_config` of a plain job-config mapping (changed in place)."""
    run = data.get("run")
    if isinstance(run, dict):
        for key in LAUNCHER_ONLY_KEYS:
            run.pop(key, None)
        if not run:
            del data["run"]
    if for_remote:
        dropped: list[str] = []
        data = _strip_secrets(data, dropped=dropped)
        for where in dropped:
            if not where.startswith("run.env."):  # profile env_vars reach the job as env vars
                import sys

                print(f"warning: {where} looks like a secret, so it is not written to train.yaml; "
                      "give it to the job as an environment variable (profile env_vars, or the "
                      "shell for local runs) and read it there", file=sys.stderr)
    return data
