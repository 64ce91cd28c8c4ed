"""env.toml validation: pydantic models -> one-line :class:`EnvFileError` naming file, line and key.

pydantic is imported inside the functions (``import nemo_runspec.env`` stays cheap).
The models themselves are in :mod:`nemo_runspec.env.model`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from nemo_runspec._suggest import closest, did_you_mean
from nemo_runspec.env.file import EnvFile, where_in
from nemo_runspec.errors import EnvFileError
from nemo_runspec.secrets import is_secret_name

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

# Names users reach for that are not keys, and the key they mean.
_KEY_ALIASES = {
    "setup": "startup_commands",
    "setup_commands": "startup_commands",
    "image": "container_image",
    "env": "env_vars",
    "environment": "env_vars",
    "num_nodes": "nodes",
    "gpus": "gpus_per_node",
    "num_gpus": "gpus_per_node",
    "ntasks": "ntasks_per_node",
    "time_limit": "time",
    "walltime": "time",
    "cpus": "cpus_per_task",
    "container_mounts": "mounts",
    "ssh_host": "host",
    "hostname": "host",
    "username": "user",
    "key_file": "identity",
    "executor_type": "executor",
    # the reference's packager options, written as profile keys
    "subpath": "packager_subpath",
    "include_pattern": "packager_include_pattern",
    "relative_path": "packager_relative_path",
}

# Names users reach for that have no profile key, and what to do instead.
_KEY_HINTS: dict[str, str] = {}


_TOML_TYPES = {str: "string", int: "integer", bool: "boolean", float: "float", list: "array", dict: "table"}


def toml_type(value: object) -> str:
    """The TOML name of ``value``'s type (``string``, ``integer``, ...) for error messages."""
    for py, name in _TOML_TYPES.items():
        if type(value) is py:
            return name
    return type(value).__name__


def _describe(annotation: object) -> str:
    """TOML-flavoured description of a type annotation: ``array of strings``."""
    import typing

    from pydantic import BaseModel

    origin = typing.get_origin(annotation)
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(annotation))
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        if len(args) == 1:
            return _describe(args[0])
        return " or ".join(_describe(a) for a in args)
    if origin is list:
        inner = _describe(args[0]) if args else "value"
        return f"array of {inner}s" if " " not in inner else f"array of ({inner})"
    if origin is dict:
        inner = _describe(args[1]) if len(args) > 1 else "value"
        return f"table of {inner}s" if " " not in inner else f"table of ({inner})"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    if isinstance(annotation, type) and annotation in _TOML_TYPES:
        return _TOML_TYPES[annotation]
    return getattr(annotation, "__name__", str(annotation))


def _annotation_at(model: type[BaseModel], keypath: tuple[Any, ...]) -> Any:
    import typing

    from pydantic import BaseModel

    annotation: object = model
    for part in keypath:
        while True:
            origin = typing.get_origin(annotation)
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)) and len(args) == 1:
                annotation = args[0]
                continue
            break
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            fld = annotation.model_fields.get(part) if isinstance(part, str) else None
            if fld is None:
                return None
            annotation = fld.annotation
        elif typing.get_origin(annotation) is dict:
            annotation = typing.get_args(annotation)[1]
        elif typing.get_origin(annotation) is list:
            annotation = typing.get_args(annotation)[0]
        else:
            return annotation
    return annotation


def _user_path(data: object, loc: tuple[Any, ...]) -> tuple[tuple[Any, ...], Any]:
    """The prefix of pydantic's ``loc`` that names real keys in ``data``, and the value there."""
    path: list[Any] = []
    value = data
    for part in loc:
        if isinstance(value, dict) and isinstance(part, str) and part in value:
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            value = value[part]
        else:
            break
        path.append(part)
    return tuple(path), value


def _dotted(path: Iterable[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _show_value(keypath: tuple[Any, ...], value: object) -> str:
    if any(isinstance(p, str) and is_secret_name(p) for p in keypath):
        return f"{toml_type(value)} (value hidden: secret-looking key)"
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{toml_type(value)} {shown}"


_CROSS_KEY = re.compile(r"^(\w+) = ")


def _validation_error(
    exc: ValidationError,
    data: Mapping[str, Any],
    model: type[BaseModel],
    section: str,
    locate: Callable[[tuple[str, ...]], tuple[str | None, int | None]],
) -> EnvFileError:
    """Turn the first (by line) pydantic error into our one-line EnvFileError."""
    candidates = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        if err["type"] == "extra_forbidden":
            path, _ = _user_path(data, loc[:-1])
            path = (*path, loc[-1])
        else:
            path, _ = _user_path(data, loc)
        str_path = tuple(p for p in path if isinstance(p, str))
        file, line = locate(str_path)
        candidates.append((line or 0, err, path, file, line))
    candidates.sort(key=lambda c: c[0])
    _, err, path, file, line = candidates[0]
    key = _dotted(path)
    etype = err["type"]
    msg = str(err["msg"]).removeprefix("Value error, ")
    if etype == "extra_forbidden":
        unknown = path[-1]
        parent = _annotation_at(model, path[:-1])
        known = list(getattr(parent, "model_fields", {}) or model.model_fields)
        hint = None
        alias = _KEY_ALIASES.get(unknown) if len(path) == 1 else None
        if alias in known:
            hint = f"did you mean '{alias}'?"
        elif len(path) == 1 and unknown in _KEY_HINTS and model.__name__ == "EnvProfileModel":
            hint = _KEY_HINTS[unknown]
        elif is_secret_name(str(unknown)):
            hint = "never put credentials in env.toml; export them in the environment instead"
            if section == "[wandb]":
                hint = "set api_key_env to the NAME of the environment variable holding the key"
        else:
            hint = did_you_mean(str(unknown), known) if closest(str(unknown), known) else None
            if hint is None:
                hint = "see docs/env-toml.md for the known keys"
        if len(path) == 1 and model.__name__ == "EnvProfileModel":
            from nemo_runspec.env.model import SECTION_MODELS

            name = section.strip("[]")
            near = closest(name, list(SECTION_MODELS))
            if near and near != name and str(unknown) in SECTION_MODELS[near].model_fields:
                hint = f"[{name}] is read as a profile: did you mean the [{near}] section?"
        where = f"{section}" if len(path) == 1 else f"{section} table {_dotted(path[:-1])!r}"
        return EnvFileError(f"unknown key {key!r} in {where}", path=file, line=line, key=key, hint=hint)
    if not path:  # model-level (cross-field) check
        m = _CROSS_KEY.match(msg)
        if m:
            file, line = locate((m.group(1),))
        return EnvFileError(f"{section}: {msg}", path=file, line=line)
    _, value = _user_path(data, path)
    shown = _show_value(path, value)
    if etype == "missing":
        return EnvFileError(f"{section} table {_dotted(path[:-1]) or key!r} is missing key {str(loc[-1])!r}", path=file, line=line, key=key)
    if etype == "value_error":
        return EnvFileError(f"key {key!r} in {section}: {msg}", path=file, line=line, key=key)
    if etype == "literal_error":
        expected = _describe(_annotation_at(model, path))
        hint = did_you_mean(str(value), [str(a) for a in _literal_values(_annotation_at(model, path))], listing=True) if isinstance(value, str) else None
        return EnvFileError(f"key {key!r} in {section} must be {expected}, got {shown}", path=file, line=line, key=key, hint=hint)
    if etype in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        bound = msg.removeprefix("Input should be ")
        return EnvFileError(f"key {key!r} in {section} must be {bound}, got {shown}", path=file, line=line, key=key)
    expected = _describe(_annotation_at(model, path))
    hint = None
    secret = any(isinstance(p, str) and is_secret_name(p) for p in path)
    if isinstance(value, (int, float, bool)) and "string" in expected:
        text = str(value).lower() if isinstance(value, bool) else str(value)
        hint = "quote it" if secret else f'quote it: "{text}"'
    return EnvFileError(
        f"key {key!r} in {section} must be {expected}, got {shown}",
        path=file, line=line, key=key, hint=hint,
    )


def _literal_values(annotation: object) -> list[Any]:
    import typing

    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    out: list[Any] = []
    for arg in typing.get_args(annotation):
        out.extend(_literal_values(arg))
    return out


def validate(
    data: Mapping[str, Any],
    model: type[BaseModel],
    section: str,
    locate: Callable[[tuple[str, ...]], tuple[str | None, int | None]],
    *,
    complete: bool = False,
) -> None:
    """Check ``data`` against ``model``; a problem is one :class:`~nemo_runspec.errors.EnvFileError`
    naming ``section``'s key and, through ``locate``, its file and line."""
    from pydantic import ValidationError

    from nemo_runspec.env import public_values

    found = public_values.credential_key(data)
    if found is not None:  # before the model, whose messages would show the value
        path, line = locate(found)
        raise EnvFileError(public_values.problem(found, section), path=path, line=line, key=".".join(found),
                           hint=public_values.HINT)
    try:
        model.model_validate(data, context={"complete": complete})
    except ValidationError as exc:
        raise _validation_error(exc, data, model, section, locate) from None
    from nemo_runspec.env.value_rules import check_values

    check_values(data, section, locate, complete=complete)


def validate_layer(
    layer: Mapping[str, Any], ef: EnvFile, profile: str, renamed: Mapping[str, str] | None = None
) -> None:
    """Validate one profile table as written. ``renamed`` maps our key to the
    reference spelling the table used (``container_image`` -> ``container``):
    errors then name and locate the user's own key."""
    from nemo_runspec.env.model import profile_model

    renamed = dict(renamed or {})
    where = where_in(ef, profile)

    def locate(keypath: tuple[str, ...]) -> tuple[str | None, int | None]:
        if keypath and keypath[0] in renamed:
            keypath = (renamed[keypath[0]], *keypath[1:])
        return where(keypath)

    try:
        validate(layer, profile_model(_chain_executor(layer, ef, profile)), f"[{profile}]", locate)
    except EnvFileError as exc:
        raise rename_in_error(exc, renamed) from None


def validate_complete(
    merged: Mapping[str, Any], ef: EnvFile, name: str, sources: Mapping[str, Any]
) -> None:
    """Validate profile ``name`` after its ``extends`` chain is merged; errors point at the
    file and line each key came from (``sources``)."""
    from nemo_runspec.env.model import profile_model

    def locate(keypath: tuple[str, ...]) -> tuple[str | None, int | None]:
        src = sources.get(".".join(keypath))
        if src is None:
            return str(ef.path), ef.line_of(name)
        return src.path, src.line

    validate(merged, profile_model(_executor(merged)), f"[{name}]", locate, complete=True)


def validate_run_env(env: Mapping[str, Any], sources: Mapping[str, str]) -> None:
    """Validate merged execution settings (``run.env``) exactly like a profile.

    ``run.env`` merges the runspec, the recipe YAML, the profile and command-line
    ``run.env.KEY=...`` overrides; the last two must not escape the checks that
    env.toml gets (types, ranges, Slurm time format, unknown keys). ``sources``
    maps keys to where they came from, which the error names.
    """
    from nemo_runspec.env.model import profile_model

    def locate(keypath: tuple[str, ...]) -> tuple[str | None, int | None]:
        for n in range(len(keypath), 0, -1):
            label = sources.get(".".join(keypath[:n]))
            if label:
                return label, None
        return None, None

    validate(dict(env), profile_model(_executor(env)), "run.env", locate, complete=True)


def validate_mapping(values: Mapping[str, Any], table: str) -> None:
    """Validate a whole profile given in Python (not read from a file): errors name ``table``."""
    from nemo_runspec.env.model import profile_model

    validate(dict(values), profile_model(_executor(values)), table, lambda _keypath: (None, None), complete=True)


def _executor(values: Mapping[str, Any]) -> str | None:
    """The executor ``values`` names (a string), which picks the model (a plug-in's keys)."""
    executor = values.get("executor")
    return executor if isinstance(executor, str) else None


def _chain_executor(layer: Mapping[str, Any], ef: EnvFile, profile: str) -> str | None:
    """The executor a profile table runs on: its own ``executor``, else the nearest one up its
    ``extends`` chain as written (a child of a plug-in's profile may set the plug-in's keys)."""
    seen: set[str] = {profile}
    table: Mapping[str, Any] = layer
    while _executor(table) is None:
        parent = table.get("extends")
        if not isinstance(parent, str) or parent in seen or not isinstance(ef.profiles.get(parent), Mapping):
            return None
        seen.add(parent)
        table = ef.profiles[parent]
    return _executor(table)


def rename_in_error(exc: EnvFileError, renamed: Mapping[str, str]) -> EnvFileError:
    """``exc`` about ``container_image`` re-worded for a table that wrote ``container``."""
    top = (exc.key or "").split(".", 1)[0]
    alias = renamed.get(top)
    if alias is None:
        return exc
    key = alias + (exc.key or "")[len(top):]
    return EnvFileError(exc.problem.replace(f"'{exc.key}'", f"'{key}'"), path=exc.path, line=exc.line,
                        key=key, hint=exc.hint)
