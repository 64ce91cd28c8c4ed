"""A config (or one section of it) checked against a pydantic model: one line per problem.

What :mod:`nemotron.data_prep.validation` and the training and evaluation recipes
share: pydantic's first error becomes one :class:`~nemo_runspec.errors.ConfigError`
line naming the key, the value as written, the expected type (``key
'fallback.max_steps' must be an integer >= 1, got string 'abc'``), where it was
set (the override that set it, else the YAML file and line of the last file of
the ``defaults:`` chain that sets it) and a hint (``did you mean``, an example
value, "a quoted value is a string"). pydantic is imported inside the functions:
``nemotron --help`` never loads it.
"""

from __future__ import annotations

import os
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from nemo_runspec._suggest import closest, did_you_mean
from nemo_runspec.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

KeyPath = tuple[str | int, ...]
#: ``(path, dotted key) -> hint`` for an unknown key that belongs to another model
#: ("'x' is a key of the sft data prep, not this one"), or None
Elsewhere = Callable[[KeyPath, str], str | None]


def check_model(
    data: object,
    model: type[BaseModel],
    *,
    files: Sequence[str | os.PathLike[str]] = (),
    overrides: Sequence[str] = (),
    allow_interpolations: bool = False,
    prefix: str = "",
    elsewhere: Elsewhere | None = None,
) -> Any:
    """``data`` (a plain mapping) validated as ``model``; the first problem is a
    :class:`ConfigError` (see the module docstring). ``prefix`` is the dotted key of
    the section ``data`` is (``"fallback"``). With ``allow_interpolations`` a
    ``${...}`` value passes for any key (it resolves later, on the node) and the
    result is None when only such values failed."""
    from pydantic import ValidationError

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = to_config_error(exc, data, model, files, overrides, allow_interpolations,
                                prefix=tuple(prefix.split(".")) if prefix else (), elsewhere=elsewhere)
    if error is not None:
        raise error
    return None


def to_config_error(
    exc: ValidationError,
    data: object,
    model: type[BaseModel],
    files: Sequence[str | os.PathLike[str]],
    overrides: Sequence[str],
    allow_interpolations: bool,
    *,
    prefix: KeyPath = (),
    elsewhere: Elsewhere | None = None,
) -> ConfigError | None:
    """The first problem of ``exc`` as a one-line ConfigError (None: only interpolations failed)."""
    errors = []
    for err in exc.errors(include_url=False):
        if allow_interpolations and err["type"] != "extra_forbidden" and is_interpolation(err.get("input")):
            continue  # resolves on the node, where settings_for checks the value
        errors.append((user_path(data, tuple(err["loc"]), err["type"]), err))
    if not errors:
        return None
    # Of the alternatives of one key (``list[str] | str``) the deepest names the exact item.
    first = errors[0][0]
    same_key = [e for e in errors if e[0][: len(first)] == first or first[: len(e[0])] == e[0]]
    path, err = max(same_key, key=lambda e: len(e[0]))
    key = _dotted(prefix + path)
    override = _override_for(path, overrides)
    file, line = (None, None) if override else locate(path, files, missing=err["type"] == "missing")
    problem, hint = _describe_error(err, path, key, data, model, from_override=override is not None,
                                    prefix=_dotted(prefix), elsewhere=elsewhere)
    if override:
        shown = f"'{override}'" if override.isprintable() else repr(override)
        problem += f" in override {shown}"
    return ConfigError(problem, path=file, line=line, key=key, hint=hint)


def user_path(data: object, loc: tuple[Any, ...], etype: str) -> KeyPath:
    """pydantic's ``loc`` without its union tags (``'list[str]'``): the keys as written."""
    if etype in ("missing", "extra_forbidden"):
        return (*user_path(data, loc[:-1], ""), loc[-1])
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


def value_at(data: Any, path: KeyPath) -> Any:
    """The value at ``path`` (keys and list indices) inside ``data``."""
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


def locate(path: KeyPath, files: Sequence[str | os.PathLike[str]], *, missing: bool) -> tuple[str | None, int | None]:
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


def field_at(model: type[BaseModel], path: KeyPath) -> Any:
    """``(annotation, FieldInfo | None)`` of the key ``path`` in ``model``, or ``(None, None)``."""
    import typing

    from pydantic import BaseModel

    annotation: object = model
    info = None
    for part in path:
        annotation = _section_of(annotation)
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


def _section_of(annotation: object) -> Any:
    """The model of an optional section (``Section | None``), else ``annotation`` itself."""
    import typing

    from pydantic import BaseModel

    models = [a for a in typing.get_args(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
    if len(models) == 1 and all(a is type(None) or a in models for a in typing.get_args(annotation)):
        return models[0]
    return annotation


def _fields_by_key(model: type[BaseModel]) -> dict[str, Any]:
    return {(info.alias or name): info for name, info in model.model_fields.items()}


def _section_model(model: type[BaseModel], path: KeyPath) -> type[BaseModel] | None:
    from pydantic import BaseModel

    annotation = model if not path else _section_of(field_at(model, path)[0])
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _show(value: object) -> str:
    """A value as the user wrote it, short, on one line: ``string 'abc'``, ``1.5``, ``true``."""
    if isinstance(value, str):
        shown = f"string {value!r}"
    elif isinstance(value, dict):
        shown = "a mapping"
    else:
        shown = yaml_text(value) if isinstance(value, bool | list) or value is None else repr(value)
        if isinstance(value, list):
            shown = f"list {shown}"
    return shown if len(shown) <= 70 else shown[:67] + "..."


def _example(info: object, key: str, *, from_override: bool) -> str | None:
    examples = getattr(info, "examples", None)
    if not examples:
        return None
    text = yaml_text(examples[0])
    return f"e.g. {key}={text}" if from_override else f"e.g. {key}: {text}"


def _describe_error(
    err: Mapping[str, Any], path: KeyPath, key: str, data: object, model: type[BaseModel],
    *, from_override: bool, prefix: str = "", elsewhere: Elsewhere | None = None,
) -> tuple[str, str | None]:
    """``(problem, hint)`` for one pydantic error at ``path`` (shown as ``key``)."""
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
            other = None if in_section or elsewhere is None else elsewhere(path, key)
            if other:
                hint = other
            else:
                hint = did_you_mean(str(leaf), known, listing=True)
                hint = hint.replace("valid: ", "valid: " + prefix) if hint and prefix else hint
        return f"unknown key '{key}'", hint
    annotation, info = field_at(model, path)
    expected = describe(annotation, getattr(info, "metadata", ())) if annotation is not None else "valid"
    if etype == "missing":
        example = _example(info, key, from_override=from_override)
        return f"missing key '{key}' ({expected})", example or (info.description if info else None)
    value = value_at(data, path)
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
def is_interpolation(value: object) -> bool:
    """Whether ``value`` is text holding an OmegaConf ``${...}`` (resolved later, in the job)."""
    return isinstance(value, str) and "${" in value


def plain(value: object) -> Any:
    """``value`` with every mapping and sequence made a plain ``dict``/``list``."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def describe(annotation: Any, metadata: list[Any] | tuple[Any, ...] = ()) -> str:
    """Human description of a field type, YAML-flavoured: ``an integer >= 1 or null``."""
    from pydantic import BaseModel

    bounds = _bounds(metadata)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is typing.Annotated:  # e.g. inside `Positive | None`: the type and its bounds
        inner = [*metadata]
        for extra in args[1:]:
            inner.extend(getattr(extra, "metadata", None) or [extra])  # a pydantic Field(ge=1) holds Ge(1)
        return describe(args[0], inner)
    if origin in (typing.Union, types.UnionType):
        parts = [describe(a, metadata) for a in args if a is not type(None)]
        if any(p.startswith("a number") for p in parts):  # an int is a number too
            parts = [p for p in parts if not p.startswith("an integer")]
        if type(None) in args:
            parts.append("null")
        return " or ".join(dict.fromkeys(parts))
    if origin is list:
        inner = describe(args[0]) if args else "value"
        inner = {"a string": "strings", "an integer": "integers", "a number": "numbers",
                 "an integer or a number": "numbers"}.get(inner, inner)
        return f"a list of {inner}"
    if origin is dict or (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
        return "a mapping"
    name = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(annotation)
    if name is None:
        return getattr(annotation, "__name__", str(annotation))
    if annotation in (int, float) and bounds:
        name += " " + bounds
    return name


def _bounds(metadata: Any) -> str:
    low = next((f">= {m.ge}" for m in metadata if getattr(m, "ge", None) is not None),
               next((f"> {m.gt}" for m in metadata if getattr(m, "gt", None) is not None), None))
    high = next((f"<= {m.le}" for m in metadata if getattr(m, "le", None) is not None),
                next((f"< {m.lt}" for m in metadata if getattr(m, "lt", None) is not None), None))
    ge = next((m.ge for m in metadata if getattr(m, "ge", None) is not None), None)
    le = next((m.le for m in metadata if getattr(m, "le", None) is not None), None)
    if ge is not None and le is not None:
        return f"between {ge} and {le}"
    return " and ".join(b for b in (low, high) if b)


def yaml_text(value: object) -> str:
    """``value`` written as in a YAML file or an override (``true``, ``null``, ``[a, b]``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ", ".join(yaml_text(v) for v in value) + "]"
    if isinstance(value, str) and (not value or value.strip() != value or value[0] in "[{'\"!&*#?|>%@`-"
                                   or value.lower() in ("true", "false", "null", "yes", "no", "on", "off")):
        return '"' + value.replace('"', '\\"') + '"'
    return str(value)
