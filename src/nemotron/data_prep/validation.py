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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nemo_runspec._suggest import closest, did_you_mean
from nemo_runspec.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

    from .schema import DataPrepSettings

KeyPath = tuple[str | int, ...]


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
        file, line = _locate(tuple(exc.key.split(".")), files, missing=False)
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
    problem = reference_keys_error(data, files) or _to_config_error(error, data, model, files, overrides, False)
    assert problem is not None
    raise problem


def check_section(model: type[BaseModel], data: Any, key: str) -> Any:
    """``data`` validated as ``model``, the section ``key`` of a config (errors name ``key.sub``)."""
    from pydantic import ValidationError

    try:
        return model.model_validate(_plain(data))
    except ValidationError as exc:
        error = _to_config_error(exc, data, model, (), (), False, prefix=tuple(key.split(".")))
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
        path = _user_path(data, tuple(err["loc"]), err["type"])
        try:
            written, value = _value_at(raw, path), _value_at(data, path)
        except (KeyError, IndexError, TypeError):
            continue
        if not (_is_interpolation(written) and isinstance(value, str)):
            continue
        try:
            decoded = parse_value(value)
        except ConfigError:
            continue
        if decoded == value and type(decoded) is str:
            continue
        if out is data:
            out = copy.deepcopy(data)
        parent = _value_at(out, path[:-1])
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
        data = _plain(cfg)
    else:
        raise ConfigError(f"a data-prep config must be a mapping, not a {type(cfg).__name__}")
    assert isinstance(data, dict)
    return data


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _is_interpolation(value: Any) -> bool:
    return isinstance(value, str) and "${" in value


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
            _to_config_error(exc, data, model, files, overrides, allow_interpolations)
    if error is not None:
        raise error
    return None


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
    file, line = _locate((found[0],), files, missing=False)
    return ConfigError(
        f"{', '.join(repr(k) for k in found)} {'is a key' if len(found) == 1 else 'are keys'} of the "
        "reference's data-prep config, not this one",
        path=file, line=line, key=found[0],
        hint="; ".join(f"{k} -> {REFERENCE_KEYS[k]}" for k in found) + " (docs/migrating-from-reference.md)")


def _to_config_error(
    exc: ValidationError,
    data: Any,
    model: type[BaseModel],
    files: Sequence[str | os.PathLike[str]],
    overrides: Sequence[str],
    allow_interpolations: bool,
    *,
    prefix: KeyPath = (),
) -> ConfigError | None:
    """The first problem of ``exc`` as a one-line ConfigError (None: only interpolations failed)."""
    errors = []
    for err in exc.errors(include_url=False):
        if allow_interpolations and err["type"] != "extra_forbidden" and _is_interpolation(err.get("input")):
            continue  # resolves on the node, where settings_for checks the value
        errors.append((_user_path(data, tuple(err["loc"]), err["type"]), err))
    if not errors:
        return None
    # Of the alternatives of one key (``list[str] | str``) the deepest names the exact item.
    first = errors[0][0]
    same_key = [e for e in errors if e[0][: len(first)] == first or first[: len(e[0])] == e[0]]
    path, err = max(same_key, key=lambda e: len(e[0]))
    key = _dotted(prefix + path)
    override = _override_for(path, overrides)
    file, line = (None, None) if override else _locate(path, files, missing=err["type"] == "missing")
    problem, hint = _describe_error(err, path, key, data, model, from_override=override is not None,
                                    prefix=_dotted(prefix))
    if override:
        shown = f"'{override}'" if override.isprintable() else repr(override)
        problem += f" in override {shown}"
    return ConfigError(problem, path=file, line=line, key=key, hint=hint)


def _user_path(data: Any, loc: tuple[Any, ...], etype: str) -> KeyPath:
    """pydantic's ``loc`` without its union tags (``'list[str]'``): the keys as written."""
    if etype in ("missing", "extra_forbidden"):
        return (*_user_path(data, loc[:-1], ""), loc[-1])
    path: list[str | int] = []
    value = data
    for part in loc:
        if isinstance(value, dict):
            if part not in value:
                break
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int):
            if not 0 <= part < len(value):
                break
            value = value[part]
        else:
            continue  # a union member's tag, not a key
        path.append(part)
    return tuple(path)


def _dotted(path: KeyPath) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _value_at(data: Any, path: KeyPath) -> Any:
    for part in path:
        data = data[part]
    return data


def _override_for(path: KeyPath, overrides: Sequence[str]) -> str | None:
    """The last override that set ``path``, one of its parents or one of its children."""
    from nemo_runspec.config.overrides import parse_override

    target = tuple(str(p) for p in path)
    if not target:
        return None
    found = None
    for raw in overrides:
        try:
            ov_path = parse_override(raw).path
        except ConfigError:
            continue
        n = min(len(ov_path), len(target))
        if ov_path[:n] == target[:n]:
            found = raw
    return found


def _locate(path: KeyPath, files: Sequence[str | os.PathLike[str]], *, missing: bool) -> tuple[str | None, int | None]:
    """The last file (in merge order) that sets ``path`` and the line; for a missing key, its parent's."""
    if not files:
        return None, None
    probe = path[:-1] if missing else path
    for f in reversed(files):
        line = _line_of(f, probe)
        if line is not None:
            return str(f), (line if probe else None)
    return str(files[-1]), None


def _line_of(file: str | os.PathLike[str], path: KeyPath) -> int | None:
    """1-based line of the key (or list item) ``path`` in a YAML file, or None."""
    import yaml

    try:
        node = yaml.compose(Path(file).read_text(encoding="utf-8-sig"), Loader=yaml.SafeLoader)
    except (OSError, ValueError, yaml.YAMLError):  # unreadable, not UTF-8, not YAML: no line
        return None
    line = 1 if node is not None else None
    for part in path:
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            hit = next(((k, v) for k, v in reversed(node.value) if getattr(k, "value", None) == part), None)
            if hit is None:
                return None
            line, node = hit[0].start_mark.line + 1, hit[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line if isinstance(node, yaml.ScalarNode) else None
    return line


def _field_at(model: type[BaseModel], path: KeyPath) -> Any:
    """``(annotation, FieldInfo | None)`` of the key ``path`` in ``model``, or ``(None, None)``."""
    import typing

    from pydantic import BaseModel

    annotation: Any = model
    info = None
    for part in path:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel) and isinstance(part, str):
            info = _fields_by_key(annotation).get(part)
            if info is None:
                return None, None
            annotation = info.annotation
            continue
        if isinstance(part, int):
            lists = [a for a in (annotation, *typing.get_args(annotation)) if typing.get_origin(a) is list]
            if not lists:
                return None, None
            annotation, info = typing.get_args(lists[0])[0], None
            continue
        return None, None
    return annotation, info


def _fields_by_key(model: type[BaseModel]) -> dict[str, Any]:
    return {(info.alias or name): info for name, info in model.model_fields.items()}


def _section_model(model: type[BaseModel], path: KeyPath) -> type[BaseModel] | None:
    from pydantic import BaseModel

    annotation = model if not path else _field_at(model, path)[0]
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _show(value: Any) -> str:
    """A value as the user wrote it, short, on one line: ``string 'abc'``, ``1.5``, ``true``."""
    from .schema import yaml_text

    if isinstance(value, str):
        shown = f"string {value!r}"
    elif isinstance(value, dict):
        shown = "a mapping"
    else:
        shown = yaml_text(value) if isinstance(value, bool | list) or value is None else repr(value)
        if isinstance(value, list):
            shown = f"list {shown}"
    return shown if len(shown) <= 70 else shown[:67] + "..."


def _example(info: Any, key: str, *, from_override: bool) -> str | None:
    from .schema import yaml_text

    examples = getattr(info, "examples", None)
    if not examples:
        return None
    text = yaml_text(examples[0])
    return f"e.g. {key}={text}" if from_override else f"e.g. {key}: {text}"


def _describe_error(
    err: Mapping[str, Any], path: KeyPath, key: str, data: Any, model: type[BaseModel],
    *, from_override: bool, prefix: str = "",
) -> tuple[str, str | None]:
    """``(problem, hint)`` for one pydantic error at ``path`` (shown as ``key``)."""
    from .schema import SETTINGS, describe

    etype = err["type"]
    leaf = path[-1] if path else ""
    in_section = bool(prefix)
    parent = ".".join(p for p in (prefix, _dotted(path[:-1])) if p)
    prefix = f"{parent}." if parent else ""
    if etype == "extra_forbidden":
        section = _section_model(model, path[:-1])
        known = sorted(_fields_by_key(section)) if section is not None else []
        best = closest(str(leaf), known)
        if best is not None:
            hint = f"did you mean '{prefix}{best}'?"
        else:
            elsewhere = [] if in_section else [s for s, m in SETTINGS.items() if _field_at(m, path)[1] is not None]
            if elsewhere:
                hint = f"'{key}' is a key of the {', '.join(elsewhere)} data prep, not this one"
            else:
                hint = did_you_mean(str(leaf), known, listing=True)
                hint = hint.replace("valid: ", "valid: " + prefix) if hint and prefix else hint
        return f"unknown key '{key}'", hint
    annotation, info = _field_at(model, path)
    expected = describe(annotation, getattr(info, "metadata", ())) if annotation is not None else "valid"
    if etype == "missing":
        example = _example(info, key, from_override=from_override)
        return f"missing key '{key}' ({expected})", example or (info.description if info else None)
    value = _value_at(data, path)
    if etype == "value_error":
        cause = (err.get("ctx") or {}).get("error")
        msg = str(cause) if cause is not None else str(err["msg"]).removeprefix("Value error, ")
        return f"key '{key}': {msg}", _example(info, key, from_override=from_override)
    problem = f"key '{key}' must be {expected}, got {_show(value)}"
    if etype == "literal_error":
        import typing

        choices = [str(a) for a in typing.get_args(annotation)]
        return problem, did_you_mean(str(value), choices, listing=True)
    hint = None
    if isinstance(value, str) and not from_override:
        hint = _unquote_hint(value, annotation, getattr(info, "metadata", ()), key)
    return problem, hint or _example(info, key, from_override=from_override)


def _unquote_hint(value: str, annotation: Any, metadata: Sequence[Any], key: str) -> str | None:
    """``write it without quotes`` when the quoted text, unquoted, would be a valid value."""
    from typing import Annotated

    from pydantic import TypeAdapter, ValidationError

    from nemo_runspec.config.overrides import parse_value

    try:
        parsed = parse_value(value)
    except ConfigError:
        return None
    if isinstance(parsed, str):
        return None
    try:
        adapter = TypeAdapter(Annotated[annotation, *metadata] if metadata else annotation)
        adapter.validate_python(parsed, strict=True)
    except ValidationError:
        return None
    return f"a quoted value is a string: write {key}: {value}"
