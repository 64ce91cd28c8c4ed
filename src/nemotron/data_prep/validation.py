"""Check a data-prep config against its schema before anything runs or is submitted.

Two checks, one schema (:mod:`nemotron.data_prep.schema`):

- :func:`check_config`, in the CLI right after the job is compiled (local run,
  ``--dry-run`` and submission alike): the config as written, interpolations
  unresolved. A whole ``${...}`` value is accepted for any key (it resolves on
  the node); everything else is checked.
- :func:`settings_for`, in the data-prep entry point on the node (and in every
  ``run_*``): the resolved config, checked strictly; returns the typed settings
  the run code reads. A hand-edited ``train.yaml`` is caught here.

A problem is one :class:`~nemo_runspec.errors.ConfigError` line naming the
override that set the key, else the file and line, with the expected type and a
hint (``did you mean``, an example value). This module imports pydantic (and
the schema) only inside its functions; the CLI imports it only when a data-prep
command runs, never for ``--help``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nemo_runspec._suggest import did_you_mean
from nemo_runspec.config.typed import (
    KeyPath,
    field_at,
    is_interpolation,
    locate,
    plain,
    to_config_error,
    user_path,
    value_at,
)
from nemo_runspec.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

    from .schema import DataPrepSettings


def model_for(stage: str) -> type[DataPrepSettings]:
    """The schema of ``stage``; an unknown stage is a :class:`ConfigError` with a hint."""
    from .schema import SETTINGS

    if stage not in SETTINGS:
        raise ConfigError(f"unknown data-prep stage {stage!r}", hint=did_you_mean(stage, SETTINGS, listing=True))
    return SETTINGS[stage]


def check_config(
    cfg: Any,
    stage: str,
    *,
    files: Sequence[str | os.PathLike[str]] | None = None,
    overrides: Sequence[str] = (),
) -> None:
    """Validate the unresolved config ``cfg`` of data-prep ``stage``; raise the first problem.

    ``files`` are the YAML files the config was merged from (parents first);
    for a config returned by :func:`nemo_runspec.config.parse_config` they are
    found by themselves. ``overrides`` are the command-line overrides, so an
    error can name the one that set a bad value. Interpolations (``${art:...}``,
    ``${oc.env:...}``) are accepted for any key: they resolve later.
    """
    if files is None:
        from nemo_runspec.config.loader import config_info

        info = config_info(cfg) if _is_dictconfig(cfg) else None
        files = info.files if info is not None else ()
    data = _container(cfg, resolve=False)
    _validate(data, model_for(stage), files, overrides, allow_interpolations=True)


def settings_for(
    cfg: Any,
    stage: str,
    *,
    files: Sequence[str | os.PathLike[str]] = (),
    overrides: Sequence[str] = (),
) -> DataPrepSettings:
    """The typed settings of data-prep ``stage`` from ``cfg`` (a DictConfig or a mapping).

    Interpolations are resolved first (a failing one is a :class:`ConfigError`),
    then every key is checked strictly. An interpolation gives text
    (``${oc.env:WORKERS}`` is ``"4"``): where that text does not fit the key's
    type it is read as a YAML value, as on the command line (``4``).
    ``files`` and ``overrides`` only make the error messages name where a bad
    value came from.
    """
    from pydantic import ValidationError

    model = model_for(stage)
    try:
        data = _container(cfg, resolve=True)
    except ConfigError as exc:  # name the file and line of the interpolation that failed
        if exc.key is None or exc.path is not None:
            raise
        file, line = locate(tuple(exc.key.split(".")), files, missing=False)
        raise ConfigError(exc.problem, path=file, line=line, key=exc.key, hint=exc.hint) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc
    if _is_dictconfig(cfg):
        decoded = _decode_interpolated(data, _container(cfg, resolve=False), error)
        if decoded is not data:
            try:
                return model.model_validate(decoded)
            except ValidationError as exc:
                error, data = exc, decoded
    problem = reference_keys_error(data, files) or to_config_error(
        error, data, model, files, overrides, False, elsewhere=_other_stage)
    assert problem is not None
    raise problem


def check_section(model: type[BaseModel], data: Any, key: str) -> Any:
    """``data`` validated as ``model``, the section ``key`` of a config (errors name ``key.sub``)."""
    from pydantic import ValidationError

    try:
        return model.model_validate(plain(data))
    except ValidationError as exc:
        error = to_config_error(exc, data, model, (), (), False, prefix=tuple(key.split(".")))
    assert error is not None
    raise error


def _decode_interpolated(data: dict[str, Any], raw: dict[str, Any], exc: ValidationError) -> dict[str, Any]:
    """``data`` with the text of each failing ``${...}`` value read as YAML (``"4"`` -> 4).

    Returns ``data`` itself when no failing value came from an interpolation.
    """
    import copy

    from nemo_runspec.config.overrides import parse_value

    out = data
    for err in exc.errors(include_url=False):
        path = user_path(data, tuple(err["loc"]), err["type"])
        try:
            written, value = value_at(raw, path), value_at(data, path)
        except (KeyError, IndexError, TypeError):
            continue
        if not (is_interpolation(written) and isinstance(value, str)):
            continue
        try:
            decoded = parse_value(value)
        except ConfigError:
            continue
        if decoded == value and type(decoded) is str:
            continue
        if out is data:
            out = copy.deepcopy(data)
        parent = value_at(out, path[:-1])
        parent[path[-1]] = decoded
    return out


def _is_dictconfig(cfg: Any) -> bool:
    from omegaconf import DictConfig  # a required dependency

    return isinstance(cfg, DictConfig)


def _container(cfg: Any, *, resolve: bool) -> dict[str, Any]:
    """A plain dict of ``cfg``; resolution errors become one-line ConfigErrors."""
    if _is_dictconfig(cfg):
        from omegaconf import OmegaConf
        from omegaconf.errors import OmegaConfBaseException

        try:
            data = OmegaConf.to_container(cfg, resolve=resolve)
        except OmegaConfBaseException as exc:
            from nemo_runspec.errors import raised_inside

            cause = raised_inside(exc)
            if cause is not None:
                raise cause from None
            key = getattr(exc, "full_key", None) or None
            msg = str(getattr(exc, "msg", None) or exc).splitlines()[0]
            where = f" of key '{key}'" if key else ""
            raise ConfigError(f"cannot resolve the value{where}: {msg}", key=key,
                              hint="check the interpolation (${art:NAME,FIELD}, ${oc.env:VAR}, ...)") from None
    elif isinstance(cfg, Mapping):
        data = plain(cfg)
    else:
        raise ConfigError(f"a data-prep config must be a mapping, not a {type(cfg).__name__}")
    assert isinstance(data, dict)
    return data


def _validate(
    data: dict[str, Any],
    model: type[DataPrepSettings],
    files: Sequence[str | os.PathLike[str]],
    overrides: Sequence[str],
    *,
    allow_interpolations: bool,
) -> DataPrepSettings | None:
    from pydantic import ValidationError

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = reference_keys_error(data, files) or \
            to_config_error(exc, data, model, files, overrides, allow_interpolations, elsewhere=_other_stage)
    if error is not None:
        raise error
    return None


def _other_stage(path: KeyPath, key: str) -> str | None:
    """The hint for an unknown key that another data-prep stage reads."""
    from .schema import SETTINGS

    stages = [s for s, m in SETTINGS.items() if field_at(m, path)[1] is not None]
    return f"'{key}' is a key of the {', '.join(stages)} data prep, not this one" if stages else None


#: top-level keys of the reference's data-prep configs -> what to write here
REFERENCE_KEYS: dict[str, str] = {
    "blend_path": "input.paths (the raw files, globs, or hf:org/name datasets the blend names)",
    "input_path": "input.paths",
    "hf_dataset": 'input.paths: ["hf:org/name"]',
    "hf_split": 'input.paths: ["hf:org/name@split"]',
    "hf_subset": 'input.paths: ["hf:org/name:subset"]',
    "tokenizer_model": "tokenizer.path",
    "add_eos": "tokenizer.add_eod",
    "add_bos": "nothing (no BOS token is added here): remove it",
    "text_field": "input.text_field",
    "chat_template": "tokenizer.chat_template (the jinja text)",
    "train_ratio": "split (e.g. split: 98,1,1)",
    "valid_ratio": "split",
    "test_ratio": "split",
    "max_samples": "sample",
}


def reference_keys_error(data: Any, files: Sequence[str | os.PathLike[str]] = ()) -> ConfigError | None:
    """One line for a config written in the reference's data-prep layout (``blend_path``,
    ``tokenizer_model``, ...): the keys it used and what to write instead, at the first one's line."""
    if not isinstance(data, dict):
        return None
    found = [k for k in data if k in REFERENCE_KEYS]
    if not found:
        return None
    file, line = locate((found[0],), files, missing=False)
    return ConfigError(
        f"{', '.join(repr(k) for k in found)} {'is a key' if len(found) == 1 else 'are keys'} of the "
        "reference's data-prep config, not this one",
        path=file, line=line, key=found[0],
        hint="; ".join(f"{k} -> {REFERENCE_KEYS[k]}" for k in found) + " (docs/migrating-from-reference.md)")


