"""env.toml execution profiles: discovery, loading, ``extends`` inheritance, validation.

An ``env.toml`` holds named execution profiles (one TOML table each) that the
CLI selects with ``--run PROFILE`` / ``--batch PROFILE``, plus four special
sections that are not profiles: ``[wandb]``, ``[cli]``, ``[cache]`` and
``[artifacts]``. See ``docs/env-toml.md`` for every key.

Every problem is an :class:`~nemo_runspec.errors.EnvFileError` whose one-line
text names the file, the line and the key. Each resolved value remembers where
it was set (:class:`Source`), so ``nemotron env show`` and job provenance can
cite ``env.toml:12 [dev]``.

This module imports only the standard library at module level; pydantic (used
to validate keys, see :mod:`nemo_runspec.env_profile_model`) is imported on
first validation so that ``import nemo_runspec.env`` stays cheap.
"""

from __future__ import annotations

import copy
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nemo_runspec._suggest import closest, did_you_mean
from nemo_runspec._toml_lines import line_map
from nemo_runspec.errors import EnvFileError
from nemo_runspec.secrets import is_secret_name, redact, secret_values

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

__all__ = [
    "ENV_FILE_NAME",
    "ENV_FILE_VAR",
    "PROFILE_KEYS",  # noqa: F822 (lazy, module __getattr__)
    "RESERVED_SECTIONS",
    "EnvFile",
    "EnvProfile",
    "Source",
    "find_env_file",
    "get_artifacts_config",
    "get_cache_config",
    "get_cli_config",
    "get_wandb_config",
    "load_env_file",
    "load_env_profile",
    "parse_env",
]

ENV_FILE_NAME = "env.toml"
ENV_FILE_VAR = "NEMOTRON_ENV_FILE"
RESERVED_SECTIONS = ("wandb", "cli", "cache", "artifacts")
# Files/dirs that mark the project root, where the upward search stops.
ROOT_MARKERS = (".git", "pyproject.toml")

# Names users reach for that are not keys, and the key they mean.
_KEY_ALIASES = {
    "setup": "startup_commands",
    "setup_commands": "startup_commands",
    "image": "container_image",
    "container": "container_image",
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
}

_CREATE_HINT = (
    "create one with `cp env.toml.example env.toml` at the project root, "
    f"or pass --env-file PATH, or set {ENV_FILE_VAR}"
)


# --------------------------------------------------------------------------- #
# Discovery
# --------------------------------------------------------------------------- #


def _project_root(start: Path) -> Path | None:
    for d in (start, *start.parents):
        if any((d / m).exists() for m in ROOT_MARKERS):
            return d
    return None


def _search_dirs(start: Path) -> list[Path]:
    """Directories searched for env.toml: ``start`` up to the project root, inclusive.

    Outside any project (no ``.git``/``pyproject.toml`` above) only ``start``
    itself is searched, so a stray ``~/env.toml`` is never picked up by accident.
    """
    root = _project_root(start)
    if root is None:
        return [start]
    dirs = []
    for d in (start, *start.parents):
        dirs.append(d)
        if d == root:
            break
    return dirs


def _explicit_path(value: str | os.PathLike[str], origin: str) -> Path:
    path = Path(os.path.expanduser(os.fspath(value))).absolute()
    if path.is_dir():
        path = path / ENV_FILE_NAME
    if not path.is_file():
        raise EnvFileError(
            f"env file {str(path)!r} given by {origin} does not exist",
            path=path,
            hint=_CREATE_HINT,
        )
    return path


def find_env_file(
    explicit: str | os.PathLike[str] | None = None, start: Path | None = None
) -> Path | None:
    """Locate the env.toml to use, or None when there is none.

    Order: ``explicit`` (``--env-file``) > ``$NEMOTRON_ENV_FILE`` > the first
    ``env.toml`` walking up from ``start`` (default: the current directory) to
    the project root (first directory holding ``.git`` or ``pyproject.toml``),
    never beyond it. An explicit or env-var path that does not exist is an
    :class:`EnvFileError` naming it (a directory means ``DIR/env.toml``).
    """
    if explicit is not None and os.fspath(explicit) != "":
        return _explicit_path(explicit, "--env-file")
    from_env = os.environ.get(ENV_FILE_VAR)
    if from_env:
        return _explicit_path(from_env, f"${ENV_FILE_VAR}")
    start = Path(start if start is not None else Path.cwd()).absolute()
    for d in _search_dirs(start):
        candidate = d / ENV_FILE_NAME
        if candidate.is_file():
            return candidate
    return None


def _not_found_error(profile: str | None, start: Path | None = None) -> EnvFileError:
    start = Path(start if start is not None else Path.cwd()).absolute()
    dirs = _search_dirs(start)
    looked = ", ".join(str(d / ENV_FILE_NAME) for d in dirs)
    what = f"profile {profile!r} was requested but " if profile else ""
    if _project_root(start) is None:
        stop = f"no project root (.git or pyproject.toml) above {start}, so only it was searched"
    else:
        stop = f"stopped at the project root {dirs[-1]}"
    return EnvFileError(
        f"{what}no {ENV_FILE_NAME} was found; looked in {looked} ({stop}) "
        f"and ${ENV_FILE_VAR} is not set",
        hint=_CREATE_HINT,
    )


# --------------------------------------------------------------------------- #
# Loading: TOML + a map of key paths to line numbers
# --------------------------------------------------------------------------- #


@dataclass
class EnvFile:
    """A parsed env.toml.

    ``profiles`` maps profile name to its raw table (as written, before
    ``extends`` and interpolation); ``sections`` always has the four special
    sections (``{}`` when absent); ``lines`` maps key paths such as
    ``("dev", "env_vars", "HF_HOME")`` to the 1-based line that set them.
    """

    path: Path
    profiles: dict[str, dict[str, Any]]
    sections: dict[str, dict[str, Any]]
    lines: dict[tuple[str, ...], int] = field(default_factory=dict, repr=False)

    def line_of(self, *keys: str) -> int | None:
        """Line of the key path ``keys`` (or of its closest enclosing table)."""
        path = tuple(keys)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None


_TOML_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_TOML_END = re.compile(r"\s*\(at end of document\)\s*$")


def load_env_file(path: str | os.PathLike[str]) -> EnvFile:
    """Read and parse an env.toml (profiles are validated when they are loaded).

    TOML syntax errors, non-table top-level entries and unreadable files are
    :class:`EnvFileError` with the path and line.
    """
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise EnvFileError(f"env file {str(path)!r} does not exist", path=path, hint=_CREATE_HINT) from None
    except UnicodeDecodeError as exc:
        raise EnvFileError(f"not UTF-8 text ({exc.reason})", path=path) from None
    except OSError as exc:
        raise EnvFileError(f"cannot read env file: {exc.strerror or exc}", path=path) from None
    text = text.removeprefix("\ufeff")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        line = None
        m = _TOML_POS.search(msg)
        if m:
            line = int(m.group(1))
            msg = msg[: m.start()] + f" (column {m.group(2)})"
        elif _TOML_END.search(msg):
            line = text.count("\n") + 1
            msg = _TOML_END.sub(" (at end of file)", msg)
        raise EnvFileError(f"invalid TOML: {msg}", path=path, line=line) from None
    lines = line_map(text)
    profiles: dict[str, dict[str, Any]] = {}
    sections: dict[str, dict[str, Any]] = {name: {} for name in RESERVED_SECTIONS}
    for name, value in data.items():
        line = lines.get((name,))
        if not isinstance(value, dict):
            if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                problem = f"[[{name}]] is an array of tables; a profile is a single [{name}] table"
            else:
                problem = (
                    f"key {name!r} is outside any table; env.toml holds only [profile] tables "
                    f"and the sections {', '.join(f'[{s}]' for s in RESERVED_SECTIONS)}"
                )
            raise EnvFileError(problem, path=path, line=line, key=name)
        if name in RESERVED_SECTIONS:
            sections[name] = value
        else:
            profiles[name] = value
    return EnvFile(path=path, profiles=profiles, sections=sections, lines=lines)


# --------------------------------------------------------------------------- #
# ${oc.env:VAR} / ${oc.env:VAR,default} interpolation
# --------------------------------------------------------------------------- #

# Only this pattern is ours; every other `$...` (shell `$HOME`, `${HOME}`,
# `$(hostname)`) is left for the shell on the cluster. `\${oc.env:X}` keeps
# the text literally (minus the backslash).
_OC_ENV = re.compile(r"(\\)?\$\{oc\.env:([^,}]*)(?:,([^}]*))?\}")


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _interpolate(
    value: Any, keypath: tuple[str, ...], where: Callable[[tuple[str, ...]], tuple[str, int | None]]
) -> Any:
    """Resolve ``${oc.env:...}`` inside every string of ``value`` (nested)."""
    if isinstance(value, dict):
        return {k: _interpolate(v, (*keypath, k), where) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, keypath, where) for v in value]
    if not isinstance(value, str) or "${oc.env:" not in value:
        return value

    def repl(m: re.Match[str]) -> str:
        if m.group(1):
            return m.group(0)[1:]
        var = m.group(2).strip()
        path, line = where(keypath)
        dotted = ".".join(keypath)
        if not var:
            raise EnvFileError(
                f"key {dotted!r}: ${{oc.env:}} needs an environment variable name",
                path=path, line=line, key=dotted,
            )
        if var in os.environ:
            return os.environ[var]
        if m.group(3) is not None:
            return _unquote(m.group(3))
        raise EnvFileError(
            f"key {dotted!r}: environment variable {var} is not set",
            path=path,
            line=line,
            key=dotted,
            hint=f"export {var}=..., or give a default: ${{oc.env:{var},DEFAULT}}",
        )

    return _OC_ENV.sub(repl, value)


# --------------------------------------------------------------------------- #
# Resolved profile
# --------------------------------------------------------------------------- #


def _display_path(path: str | os.PathLike[str] | None) -> str | None:
    if path is None:
        return None
    p = Path(path)
    try:
        rel = p.absolute().relative_to(Path.cwd())
    except ValueError:
        return str(p)
    return str(rel)


@dataclass(frozen=True)
class Source:
    """Where a resolved value was set: profile, file and line."""

    profile: str | None
    path: str | None
    line: int | None

    @property
    def label(self) -> str:
        """Human label such as ``env.toml:12 [dev]`` (path relative to cwd when inside it)."""
        where = _display_path(self.path) or "<default>"
        if self.line is not None:
            where += f":{self.line}"
        if self.profile is not None:
            where += f" [{self.profile}]"
        return where

    def __str__(self) -> str:
        return self.label


_MISSING: Any = object()


@dataclass
class EnvProfile:
    """A resolved execution profile.

    ``values`` holds only keys set in env.toml (after ``extends`` merging and
    ``${oc.env:...}`` resolution), never defaults; :meth:`get` falls back to
    the documented defaults. ``sources`` maps each key (and each nested key of a
    table, dotted: ``env_vars.HF_HOME``) to the :class:`Source` that set it.
    ``chain`` lists the profile and its ancestors, child first.
    """

    name: str
    path: Path | None
    chain: list[str]
    values: dict[str, Any]
    sources: dict[str, Source]

    @property
    def executor(self) -> str:
        """``local`` or ``slurm``."""
        return self.get("executor")

    @property
    def description(self) -> str | None:
        """The profile's ``description``, if any."""
        return self.values.get("description")

    def get(self, key: str, default: Any = _MISSING) -> Any:
        """The value of ``key``: set value, else ``default`` if given, else its documented default."""
        if key in self.values:
            return self.values[key]
        if default is not _MISSING:
            return default
        return profile_defaults().get(key)

    def __contains__(self, key: object) -> bool:
        return key in self.values

    def partition_for(self, mode: str) -> str | None:
        """Partition for ``mode``: ``run_partition``/``batch_partition`` if set, else ``partition``."""
        specific = {"run": "run_partition", "batch": "batch_partition"}.get(mode)
        if specific and self.values.get(specific):
            return self.values[specific]
        return self.values.get("partition")

    def redacted_values(self) -> dict[str, Any]:
        """``values`` with secret-looking entries (and their values anywhere) redacted."""
        env_vars = self.values.get("env_vars") or {}
        return redact(self.values, extra_values=secret_values(env_vars))

    def to_dict(self, *, redacted: bool = False) -> dict[str, Any]:
        """Plain-data form: name, path, chain, values, sources (labels)."""
        return {
            "name": self.name,
            "path": str(self.path) if self.path is not None else None,
            "chain": list(self.chain),
            "values": self.redacted_values() if redacted else copy.deepcopy(self.values),
            "sources": {k: s.label for k, s in self.sources.items()},
        }


def profile_defaults() -> dict[str, Any]:
    """Documented defaults of profile keys (applied by :meth:`EnvProfile.get`)."""
    from nemo_runspec.env_profile_model import PROFILE_DEFAULTS

    return dict(PROFILE_DEFAULTS)


def _coerce_env_file(env_file: str | os.PathLike[str] | EnvFile | None, profile: str | None) -> EnvFile:
    if isinstance(env_file, EnvFile):
        return env_file
    if env_file is None:
        found = find_env_file()
        if found is None:
            raise _not_found_error(profile)
        return load_env_file(found)
    return load_env_file(env_file)


def _profile_names_error(ef: EnvFile, name: str) -> EnvFileError:
    if name in RESERVED_SECTIONS:
        return EnvFileError(
            f"[{name}] is a special section, not an execution profile",
            path=ef.path,
            line=ef.line_of(name),
            hint=did_you_mean(name, ef.profiles, listing=True) if ef.profiles else "the file defines no profiles",
        )
    if not ef.profiles:
        return EnvFileError(f"unknown profile {name!r}: the file defines no profiles", path=ef.path)
    return EnvFileError(
        f"unknown profile {name!r}",
        path=ef.path,
        hint=did_you_mean(name, ef.profiles, listing=True),
    )


def _resolve_chain(ef: EnvFile, name: str) -> list[str]:
    if name not in ef.profiles:
        raise _profile_names_error(ef, name)
    chain = [name]
    current = name
    while True:
        parent = ef.profiles[current].get("extends")
        if parent is None:
            return chain
        line = ef.line_of(current, "extends")
        if not isinstance(parent, str):
            raise EnvFileError(
                f"key 'extends' in [{current}] must be a string (a profile name), "
                f"got {_toml_type(parent)} {parent!r}",
                path=ef.path, line=line, key="extends",
            )
        if parent in RESERVED_SECTIONS:
            raise EnvFileError(
                f"[{current}] extends [{parent}], which is a special section, not a profile",
                path=ef.path, line=line, key="extends",
                hint=did_you_mean(parent, ef.profiles, listing=True),
            )
        if parent not in ef.profiles:
            raise EnvFileError(
                f"[{current}] extends unknown profile {parent!r}",
                path=ef.path, line=line, key="extends",
                hint=did_you_mean(parent, ef.profiles, listing=True),
            )
        if parent in chain:
            raise EnvFileError(
                "extends cycle: " + " -> ".join([*chain, parent]),
                path=ef.path, line=line, key="extends",
            )
        chain.append(parent)
        current = parent


def _merge(
    dst: dict[str, Any],
    src: Mapping[str, Any],
    prefix: tuple[str, ...],
    profile: str,
    owners: dict[tuple[str, ...], str],
) -> None:
    """Deep-merge ``src`` into ``dst`` (tables key by key, lists replaced)."""
    for key, value in src.items():
        path = (*prefix, key)
        owners[path] = profile
        if isinstance(value, dict) and isinstance(dst.get(key), dict):
            _merge(dst[key], value, path, profile, owners)
        else:
            # Drop owners of nested keys that this value replaces.
            for stale in [p for p in owners if p[: len(path)] == path and len(p) > len(path)]:
                del owners[stale]
            dst[key] = copy.deepcopy(value)
            if isinstance(value, dict):
                _mark(value, path, profile, owners)


def _mark(value: Mapping[str, Any], prefix: tuple[str, ...], profile: str, owners: dict) -> None:
    for key, sub in value.items():
        owners[(*prefix, key)] = profile
        if isinstance(sub, dict):
            _mark(sub, (*prefix, key), profile, owners)


def _normalise_aliases(layer: dict[str, Any], ef: EnvFile, profile: str) -> dict[str, Any]:
    """``nproc_per_node`` is an alias of ``gpus_per_node``; both set must agree."""
    nproc, gpus = layer.get("nproc_per_node"), layer.get("gpus_per_node")
    if nproc is None and gpus is None:
        return layer
    if nproc is not None and gpus is not None and nproc != gpus:
        raise EnvFileError(
            f"[{profile}] sets nproc_per_node = {nproc} and gpus_per_node = {gpus}; "
            "nproc_per_node is an alias of gpus_per_node, so they must agree",
            path=ef.path,
            line=ef.line_of(profile, "nproc_per_node"),
            key="nproc_per_node",
            hint="keep only gpus_per_node",
        )
    # Fold the alias into gpus_per_node: keeping both would let a later override of
    # gpus_per_node (e.g. run.env.gpus_per_node=2) leave torchrun at the old count.
    layer = dict(layer)
    layer["gpus_per_node"] = gpus if gpus is not None else nproc
    layer.pop("nproc_per_node", None)
    return layer


def _where_in(ef: EnvFile, table: str) -> Callable[[tuple[str, ...]], tuple[str, int | None]]:
    """``keypath -> (file, line)`` for keys of ``[table]`` (a profile or a special section)."""
    return lambda keypath: (str(ef.path), ef.line_of(table, *keypath))


def load_env_profile(
    name: str, env_file: str | os.PathLike[str] | EnvFile | None = None
) -> EnvProfile:
    """Resolve profile ``name``: follow ``extends``, merge, interpolate, validate.

    ``env_file`` is a path, an already loaded :class:`EnvFile`, or None to
    discover one with :func:`find_env_file`.
    """
    ef = _coerce_env_file(env_file, name)
    chain = _resolve_chain(ef, name)
    layers: dict[str, dict[str, Any]] = {}
    for prof in chain:
        layer = _interpolate(ef.profiles[prof], (), _where_in(ef, prof))
        _validate_layer(layer, ef, prof)
        layers[prof] = _normalise_aliases(layer, ef, prof)
    merged: dict[str, Any] = {}
    owners: dict[tuple[str, ...], str] = {}
    for prof in reversed(chain):
        _merge(merged, layers[prof], (), prof, owners)
    sources = {
        ".".join(path): Source(prof, str(ef.path), ef.line_of(prof, *path))
        for path, prof in sorted(owners.items())
    }
    _validate_complete(merged, ef, name, sources)
    return EnvProfile(name=name, path=ef.path, chain=chain, values=merged, sources=sources)


def parse_env(ctx: Any) -> EnvProfile | None:
    """The profile selected on the command line, or None in local mode.

    ``ctx`` is a :class:`~nemo_runspec.cli_context.GlobalContext` (anything with
    ``.profile`` and ``.env_file``). A profile without any env.toml to read is an
    error saying where we looked and how to create one.
    """
    name = getattr(ctx, "profile", None)
    explicit = getattr(ctx, "env_file", None)
    if name is None:
        if explicit or os.environ.get(ENV_FILE_VAR):
            find_env_file(explicit)  # a missing named env file is an error even in local mode
        return None
    path = find_env_file(explicit)
    if path is None:
        raise _not_found_error(name)
    ef = load_env_file(path)  # read once for the profile and the special sections
    profile = load_env_profile(name, ef)
    # The special sections matter to this job too (W&B, artifact root, caches):
    # a typo there must fail now, not only under `nemotron env list`.
    for section in (get_wandb_config, get_artifacts_config, get_cache_config, get_cli_config):
        section(ef)
    return profile


# --------------------------------------------------------------------------- #
# Validation (pydantic, imported lazily) -> one-line EnvFileError
# --------------------------------------------------------------------------- #

_TOML_TYPES = {str: "string", int: "integer", bool: "boolean", float: "float", list: "array", dict: "table"}


def _toml_type(value: Any) -> str:
    for py, name in _TOML_TYPES.items():
        if type(value) is py:
            return name
    return type(value).__name__


def _describe(annotation: Any) -> str:
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

    annotation: Any = model
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


def _user_path(data: Any, loc: tuple[Any, ...]) -> tuple[tuple[Any, ...], Any]:
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


def _show_value(keypath: tuple[Any, ...], value: Any) -> str:
    if any(isinstance(p, str) and is_secret_name(p) for p in keypath):
        return f"{_toml_type(value)} (value hidden: secret-looking key)"
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{_toml_type(value)} {shown}"


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
        elif is_secret_name(str(unknown)):
            hint = "never put credentials in env.toml; export them in the environment instead"
            if section == "[wandb]":
                hint = "set api_key_env to the NAME of the environment variable holding the key"
        else:
            hint = did_you_mean(str(unknown), known) if closest(str(unknown), known) else None
            if hint is None:
                hint = "see docs/env-toml.md for the known keys"
        if len(path) == 1 and model.__name__ == "EnvProfileModel":
            from nemo_runspec.env_profile_model import SECTION_MODELS

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


def _literal_values(annotation: Any) -> list[Any]:
    import typing

    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    out: list[Any] = []
    for arg in typing.get_args(annotation):
        out.extend(_literal_values(arg))
    return out


def _validate(
    data: Mapping[str, Any],
    model: type[BaseModel],
    section: str,
    locate: Callable[[tuple[str, ...]], tuple[str | None, int | None]],
    *,
    complete: bool = False,
) -> None:
    from pydantic import ValidationError

    try:
        model.model_validate(data, context={"complete": complete})
    except ValidationError as exc:
        raise _validation_error(exc, data, model, section, locate) from None


def _validate_layer(layer: Mapping[str, Any], ef: EnvFile, profile: str) -> None:
    from nemo_runspec.env_profile_model import EnvProfileModel

    _validate(layer, EnvProfileModel, f"[{profile}]", _where_in(ef, profile))


def _validate_complete(
    merged: Mapping[str, Any], ef: EnvFile, name: str, sources: Mapping[str, Source]
) -> None:
    from nemo_runspec.env_profile_model import EnvProfileModel

    def locate(keypath: tuple[str, ...]) -> tuple[str | None, int | None]:
        src = sources.get(".".join(keypath))
        if src is None:
            return str(ef.path), ef.line_of(name)
        return src.path, src.line

    _validate(merged, EnvProfileModel, f"[{name}]", locate, complete=True)


def validate_run_env(env: Mapping[str, Any], sources: Mapping[str, str]) -> None:
    """Validate merged execution settings (``run.env``) exactly like a profile.

    ``run.env`` merges the runspec, the recipe YAML, the profile and command-line
    ``run.env.KEY=...`` overrides; the last two must not escape the checks that
    env.toml gets (types, ranges, Slurm time format, unknown keys). ``sources``
    maps keys to where they came from, which the error names.
    """
    from nemo_runspec.env_profile_model import EnvProfileModel

    def locate(keypath: tuple[str, ...]) -> tuple[str | None, int | None]:
        for n in range(len(keypath), 0, -1):
            label = sources.get(".".join(keypath[:n]))
            if label:
                return label, None
        return None, None

    _validate(dict(env), EnvProfileModel, "run.env", locate, complete=True)


# --------------------------------------------------------------------------- #
# Special sections
# --------------------------------------------------------------------------- #


def _section(name: str, env_file: str | os.PathLike[str] | EnvFile | None) -> tuple[dict[str, Any], EnvFile | None]:
    if isinstance(env_file, EnvFile):
        ef = env_file
    else:
        path = find_env_file(env_file)
        if path is None:
            return {}, None
        ef = load_env_file(path)
    raw = ef.sections.get(name) or {}
    if not raw:
        return {}, ef
    from nemo_runspec.env_profile_model import SECTION_MODELS

    where = _where_in(ef, name)
    data = _interpolate(raw, (), where)
    _validate(data, SECTION_MODELS[name], f"[{name}]", where)
    return data, ef


def get_wandb_config(env_file: str | os.PathLike[str] | EnvFile | None = None) -> dict[str, Any]:
    """The validated ``[wandb]`` section (``{}`` if absent); ``api_key_env`` defaults to WANDB_API_KEY."""
    data, _ = _section("wandb", env_file)
    if data:
        data.setdefault("api_key_env", "WANDB_API_KEY")
    return data


def get_artifacts_config(env_file: str | os.PathLike[str] | EnvFile | None = None) -> dict[str, Any]:
    """The validated ``[artifacts]`` section (``{}`` if absent)."""
    return _section("artifacts", env_file)[0]


def get_cache_config(env_file: str | os.PathLike[str] | EnvFile | None = None) -> dict[str, Any]:
    """The validated ``[cache]`` section (``{}`` if absent)."""
    return _section("cache", env_file)[0]


def get_cli_config(env_file: str | os.PathLike[str] | EnvFile | None = None) -> dict[str, Any]:
    """The validated ``[cli]`` section (``{}`` if absent); ``default_profile`` must name a profile."""
    data, ef = _section("cli", env_file)
    default = data.get("default_profile")
    if ef is not None and default is not None and default not in ef.profiles:
        raise EnvFileError(
            f"[cli] default_profile names unknown profile {default!r}",
            path=ef.path,
            line=ef.line_of("cli", "default_profile"),
            key="default_profile",
            hint=did_you_mean(default, ef.profiles, listing=True),
        )
    return data


def __getattr__(name: str) -> Any:
    if name == "PROFILE_KEYS":
        from nemo_runspec.env_profile_model import EnvProfileModel

        keys = tuple(EnvProfileModel.model_fields)
        globals()["PROFILE_KEYS"] = keys
        return keys
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
