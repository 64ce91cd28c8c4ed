"""env.toml (and ``run.env``) forms written for the reference system, read as ours.

Users arrive with env.toml files and recipe configs written for the reference
(upstream Nemotron, docs "Execution through NeMo-Run"). What that system
accepts must work here, or fail with one line saying what to change. This
module is the one place that translates; :mod:`nemo_runspec.env.profile`
applies it to every env.toml profile, :mod:`nemo_runspec.config.job_config` to
the recipe YAML's ``run.env`` and to ``run.env.KEY=...`` on the command line.

Per table (one profile, one YAML ``run.env``), before validation:

- **synonyms** (:data:`SYNONYMS`): ``container`` is ``container_image``; the
  packager options under nemo-run's names, ``subpath``, ``include_pattern`` and
  ``relative_path``, are ``packager_subpath``, ``packager_include_pattern`` and
  ``packager_relative_path`` (``include_submodules`` is the same name in both). With
  both spellings in one table ours wins (as ``container_image`` does in the
  reference) and a note says so.
- ``env_vars`` as an **array of "NAME=value" strings** becomes the table
  ``{NAME = "value"}`` (split at the first ``=``; a later entry for the same
  name wins). Secret-looking names stay secrets: after this they are ordinary
  ``env_vars`` entries, split off by :func:`nemo_runspec.secrets.is_secret_name`.
- ``mounts`` entries ``${auto_mount:git+URL@ref,/target}`` (a git repository
  cloned on the cluster and mounted) move to ``git_mounts`` (checked here;
  cloned at submission by :mod:`nemo_runspec.env.git_mounts`).
- ``executor = "docker" | "skypilot" | "dgxcloud" | "lepton"`` (executors the
  reference lists) are read as they are (:mod:`nemo_runspec.env.executor_keys`);
  DGX Cloud's ``app_id``/``app_secret`` (the reference's names, from older
  nemo-run) are ``client_id``/``client_secret``.

On the merged settings (after ``extends``, all layers):

- ``packager = "hybrid"`` without ``[PROFILE.packagers.NAME]`` tables: the
  reference configures its HybridPackager in Python and never reads this key
  from env.toml, so its jobs are packaged the way the recipe command chooses.
  Here too: the key is dropped (the recipe's default packager), with a warning
  that says how to name sub-packagers.

Each translation leaves a :class:`Note` (``warn`` ones are printed by recipe
commands; all are shown by ``nemotron env show/check``). Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nemo_runspec.errors import EnvFileError

#: reference spelling -> our key. The packager options are nemo-run's own names
#: (GitArchivePackager/PatternPackager), as the reference's packager tables list them.
SYNONYMS: dict[str, str] = {"container": "container_image", "app_id": "client_id",
                            "app_secret": "client_secret", "subpath": "packager_subpath",
                            "include_pattern": "packager_include_pattern",
                            "relative_path": "packager_relative_path"}

#: profile keys a command line may give as ``run.KEY=v`` besides ``run.env.KEY=v``
#: (all profile keys and synonyms except these two, which describe the profile itself)
NOT_SHORTHAND = frozenset({"extends", "description"})


Where = Callable[[tuple[str, ...]], tuple[str | None, int | None]]


@dataclass(frozen=True)
class Note:
    """What a translation did, where: ``env.toml:5: [dev] container is read as container_image``."""

    text: str
    path: str | None = None
    line: int | None = None
    warn: bool = False

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        return where + self.text


def shorthand_keys() -> frozenset[str]:
    """Keys ``K`` for which ``run.K=v`` on the command line means ``run.env.K=v``."""
    from nemo_runspec.env.model import EnvProfileModel

    return (frozenset(EnvProfileModel.model_fields) | frozenset(SYNONYMS)) - NOT_SHORTHAND


def canonical_key(key: str) -> str:
    """Our name of a profile key (``container`` -> ``container_image``)."""
    return SYNONYMS.get(key, key)


def env_vars_table(value: object, *, table: str, where: Where) -> Any:
    """``["A=1", "B=x=y"]`` -> ``{"A": "1", "B": "x=y"}``; anything but a list is returned as is.

    An entry that is not a ``NAME=value`` string is an :class:`EnvFileError`
    naming the entry and how to write it.
    """
    if not isinstance(value, list):
        return value
    from nemo_runspec.secrets import looks_like_credential

    out: dict[str, str] = {}
    for i, item in enumerate(value):
        name, sep, text = item.partition("=") if isinstance(item, str) else ("", "", "")
        if not sep or not name.strip():
            path, line = where(("env_vars",))
            if isinstance(item, str):
                shown = "string (value hidden)" if looks_like_credential(item) else f"string {item!r}"
            else:
                shown = type(item).__name__ if not isinstance(item, (int, float, bool)) else \
                    {bool: "boolean", int: "integer", float: "float"}[type(item)]
            raise EnvFileError(
                f"entry {i} of 'env_vars' in {table} must be a \"NAME=value\" string, got {shown}",
                path=path, line=line, key=f"env_vars[{i}]",
                hint='write "NAME=value", or use a table: env_vars = { NAME = "value" }',
            )
        out[name.strip()] = text
    return out


def _split_auto_mounts(value: object, *, table: str, where: Where, notes: list[Note]) -> tuple[Any, list[dict[str, str]]]:
    """``mounts`` without its ``${auto_mount:...}`` entries, and those entries as
    ``git_mounts`` (cloned on the cluster at submission: :mod:`nemo_runspec.env.git_mounts`)."""
    from nemo_runspec.env import git_mounts
    from nemo_runspec.errors import ConfigError

    if not isinstance(value, list):
        return value, []
    kept, found = [], []
    for i, item in enumerate(value):
        if git_mounts.is_auto_mount(item):
            path, line = where(("mounts",))
            try:
                found.append(git_mounts.parse_entry(item).as_dict())
            except ConfigError as exc:
                raise EnvFileError(f"{table} mounts[{i}]: {exc.problem}", path=path, line=line,
                                   key=f"mounts[{i}]", hint=exc.hint) from None
            continue
        kept.append(item)
    return kept, found


def normalize_layer(
    layer: Mapping[str, Any], *, table: str, where: Where, notes: list[Note]
) -> tuple[dict[str, Any], dict[str, str]]:
    """One table (a profile or a YAML ``run.env``) in our form (see the module docstring).

    ``table`` names it in messages (``[dev]``, ``run.env``); ``where(keypath)``
    gives ``(file, line)`` of a key as written. Returns the table and
    ``{our key: the key as written}`` for the keys that were renamed, so
    errors and sources can point at the user's own line. Translations are
    appended to ``notes``.
    """
    out = dict(layer)
    renamed: dict[str, str] = {}
    for alias, ours in SYNONYMS.items():
        if alias not in out:
            continue
        value = out.pop(alias)
        path, line = where((alias,))
        if ours in out:
            if out[ours] != value:
                notes.append(Note(f"{table} sets both {alias} and {ours}; {ours} wins and "
                                  f"{alias} is ignored (as in the reference): remove one", path, line))
            continue
        out[ours] = value
        renamed[ours] = alias
        notes.append(Note(f"{table} {alias} is read as {ours} (the reference's synonym)", path, line))
    if isinstance(out.get("env_vars"), list):
        out["env_vars"] = env_vars_table(out["env_vars"], table=table, where=where)
        path, line = where(("env_vars",))
        notes.append(Note(f"{table} env_vars is a list of \"NAME=value\" strings: read as a table",
                          path, line))
    if "mounts" in out:
        out["mounts"], found = _split_auto_mounts(out["mounts"], table=table, where=where, notes=notes)
        if found:
            out["git_mounts"] = [*(out.get("git_mounts") or []), *found]
            renamed["git_mounts"] = "mounts"  # its source is the mounts line
    return out, renamed


def normalize_merged(values: dict[str, Any], *, table: str, where: Where, notes: list[Note]) -> dict[str, Any]:
    """The merged settings (all layers) in our form: ``packager = "hybrid"`` without
    sub-packagers becomes the recipe's default packager (see the module docstring)."""
    if values.get("packager") == "hybrid" and not values.get("packagers"):
        path, line = where(("packager",))
        name = table.strip("[]") if table.startswith("[") else "PROFILE"
        notes.append(Note(
            f'{table} packager = "hybrid" names no sub-packagers, so the recipe\'s default packager '
            f"is used (the reference configures HybridPackager in Python); to choose them add e.g. "
            f'[{name}.packagers.code] packager = "git"', path, line, warn=True))
        values = {k: v for k, v in values.items() if k != "packager"}
    return values


def translate_mapping(env: Mapping[str, Any], *, table: str = "env", validate: bool = True,
                      notes: list[Note] | None = None) -> dict[str, Any]:
    """A profile given as a plain mapping (a ``dict``, a ``DictConfig``), read as an env.toml profile.

    The Python calls (``create_executor(env={...})``, ``build_env_vars(cfg, {...})``)
    get the same forms as env.toml: ``container`` is ``container_image``, an
    ``env_vars`` list is a table, ``${auto_mount:...}`` mounts are ``git_mounts``,
    a bare ``packager = "hybrid"`` is the default packager. With ``validate``
    the result is then checked like a whole profile (types, unknown keys with
    "did you mean", the keys each executor reads), an
    :class:`~nemo_runspec.errors.EnvFileError` naming ``table`` and the key.
    ``None`` values count as unset.
    """
    if type(env).__name__ == "DictConfig":
        from omegaconf import OmegaConf

        env = OmegaConf.to_container(env, resolve=True)  # type: ignore[assignment]
    if not isinstance(env, Mapping):
        raise EnvFileError(f"{table} must be a mapping of profile keys, not a {type(env).__name__}")
    notes = [] if notes is None else notes

    def nowhere(_keypath: tuple[str, ...]) -> tuple[str | None, int | None]:
        return None, None

    from nemo_runspec.env.resources import fold_profile_alias

    layer = {str(k): v for k, v in env.items() if v is not None}
    layer, renamed = normalize_layer(layer, table=table, where=nowhere, notes=notes)
    layer = fold_profile_alias(layer, profile=table.strip("[]"))
    layer = normalize_merged(layer, table=table, where=nowhere, notes=notes)
    if validate:
        from nemo_runspec.env.validation import rename_in_error, validate_mapping

        try:
            validate_mapping(layer, table)
        except EnvFileError as exc:
            raise rename_in_error(exc, renamed) from None
    return layer


def holds_profile_values(env: object) -> bool:
    """True for an ``EnvProfile`` or any object holding its set keys as a ``values``
    mapping; False for a plain mapping or ``DictConfig`` (whose ``values`` is a method)."""
    return isinstance(getattr(env, "values", None), Mapping)
