"""Read ``[tool.runspec]`` from a PEP 723 ``# /// script`` block and validate it.

Public entry points are :func:`parse` (a file, cached on the file's identity) and
:func:`parse_text` (text already in memory). Both return a frozen
:class:`~nemo_runspec.spec.models.Runspec` or raise
:class:`~nemo_runspec.errors.RunspecError` whose ``str()`` is
``path:line: problem (hint)`` with ``line`` pointing into the *script file*.

Kept deliberately light: stdlib ``tomllib`` plus hand-written checks (no
pydantic/omegaconf/rich), so parsing 1,000 recipes takes a fraction of a second.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from nemo_runspec import script_values
from nemo_runspec._suggest import closest, did_you_mean
from nemo_runspec.errors import RunspecError
from nemo_runspec.secrets import looks_like_credential
from nemo_runspec.spec.cmd import PLACEHOLDERS, template_problems
from nemo_runspec.spec.models import (
    LAUNCH_SYNONYMS,
    LAUNCH_VALUES,
    NAME_MAX,
    SUPPORTED_SCHEMAS,
    Runspec,
    RunspecConfig,
    RunspecResources,
    RunspecRun,
)
from nemo_runspec.spec.pep723 import BLOCK_TYPE, Block, find_block
from nemo_runspec.spec.scales import read_entries  # the scale matrix, section 8 of the spec
from nemo_runspec.spec.toml_lines import deepest_line, line_map

__all__ = ["parse", "parse_text", "clear_cache", "collect_errors", "BLOCK_TYPE"]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOML_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_TOML_EOD = re.compile(r"\s*\(at end of document\)\s*$")

# Defaults of the optional tables: the dataclasses' own (_models.py is their one home).
_RUN, _CONFIG, _RESOURCES = RunspecRun(), RunspecConfig(), RunspecResources()

# Keys allowed in each table (relative to [tool.runspec]).
TOP_KEYS: tuple[str, ...] = (
    "schema", "docs", "name", "image", "setup", "run", "config", "resources", "env", "scales",
)
RUN_KEYS: tuple[str, ...] = ("launch", "cmd", "workdir", "setup")
CONFIG_KEYS: tuple[str, ...] = ("dir", "default", "format")
RESOURCES_KEYS: tuple[str, ...] = ("nodes", "gpus_per_node")
#: ``resources.gpus_per_node = "gpu"``: all GPUs of a node, as the env.toml profile states them
ALL_NODE_GPUS = "gpu"


# --------------------------------------------------------------------------- key -> line

class _Locator:
    """Finds the script line of a runspec key; the map is built only on first error."""

    __slots__ = ("block", "_map")

    def __init__(self, block: Block) -> None:
        self.block = block
        self._map: dict[tuple[str, ...], int] | None = None

    def line(self, key: str | None) -> int:
        if self._map is None:
            self._map = line_map("\n".join(self.block.lines))
        parts = ("tool", "runspec") + (tuple(key.split(".")) if key else ())
        while parts:
            if parts in self._map:
                return self.block.script_line(self._map[parts])
            parts = parts[:-1]
        return self.block.opener_line


# --------------------------------------------------------------------------- validation

_MISSING = object()


class _Checker:
    """Collects validation problems for one ``[tool.runspec]`` table."""

    __slots__ = ("path", "loc", "errors", "suggested")

    def __init__(self, path: str, loc: _Locator) -> None:
        self.path = path
        self.loc = loc
        self.errors: list[RunspecError] = []
        self.suggested: set[str] = set()  # keys offered as "did you mean" so far

    def fail(self, key: str | None, problem: str, hint: str | None = None) -> None:
        self.errors.append(
            RunspecError(problem, path=self.path, line=self.loc.line(key), key=key, hint=hint)
        )

    def unknown_keys(self, table: Mapping[str, Any], allowed: tuple[str, ...], prefix: str) -> None:
        for name in table:
            if name not in allowed:
                key = f"{prefix}{name}"
                where = f"[tool.runspec.{prefix[:-1]}]" if prefix else "[tool.runspec]"
                best = closest(name, allowed)
                if best is not None:
                    self.suggested.add(prefix + best)
                self.fail(
                    key,
                    f"unknown key '{key}' in {where}",
                    did_you_mean(name, allowed, listing=True),
                )

    def table(self, data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
        value = data.get(name, _MISSING)
        if value is _MISSING:
            return {}
        if not isinstance(value, dict):
            self.fail(
                name,
                f"'{name}' must be a table, got {_type_name(value)}",
                f"write it as [tool.runspec.{name}]",
            )
            return {}
        return value

    def string(
        self, data: Mapping[str, Any], name: str, key: str, default: str | None
    ) -> str | None:
        value = data.get(name, _MISSING)
        if value is _MISSING:
            return default
        if not isinstance(value, str):
            self.fail(key, f"'{key}' must be a string, got {_type_name(value)}", _quote_hint(value))
            return default
        if not value.strip():
            self.fail(key, f"'{key}' must not be empty", "remove the key to use the default")
            return default
        return value

    def count(
        self, data: Mapping[str, Any], name: str, key: str, default: int, minimum: int = 1
    ) -> int:
        value = data.get(name, _MISSING)
        if value is _MISSING:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(
                key,
                f"'{key}' must be an integer, got {_type_name(value)}",
                "write a whole number without quotes, e.g. 1",
            )
            return default
        if value < minimum:
            self.fail(key, f"'{key}' must be at least {minimum}, got {value}")
            return default
        return value


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"float {value}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


def _quote_hint(value: object) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'quote it: "{value}"'
    return None


def _validate(data: Any, path: str, script_path: str, loc: _Locator) -> tuple[Runspec | None, list[RunspecError]]:
    chk = _Checker(path, loc)
    chk.unknown_keys(data, TOP_KEYS, "")

    schema_raw = data.get("schema", "1")
    schema = "1"
    if isinstance(schema_raw, bool) or not isinstance(schema_raw, (str, int)):
        chk.fail("schema", f"'schema' must be a string, got {_type_name(schema_raw)}",
                 'use schema = "1"')
    elif str(schema_raw) not in SUPPORTED_SCHEMAS:
        chk.fail("schema", f"unsupported runspec schema {schema_raw!r}",
                 "supported: " + ", ".join(repr(s) for s in SUPPORTED_SCHEMAS))
    else:
        schema = str(schema_raw)

    name = data.get("name", _MISSING)
    if name is _MISSING:
        if "name" not in chk.suggested:  # else "did you mean 'name'?" already said it
            chk.fail(
                None, "missing required key 'name' in [tool.runspec]",
                'add e.g. name = "nano3/pretrain"',
            )
        name = None
    else:
        name = chk.string(data, "name", "name", None)
        if name is not None and len(name) > NAME_MAX:
            chk.fail("name", f"'name' is {len(name)} characters long; at most {NAME_MAX}",
                     "it names the job's directories and log files, whose names must fit in 255 bytes")
            name = None

    docs = chk.string(data, "docs", "docs", None)
    image = chk.string(data, "image", "image", None)
    if image is not None and looks_like_credential(image):
        chk.fail("image", "'image' holds what looks like a credential (value not shown), and Slurm shows the "
                 "image to every user", "log in to the registry on the cluster (enroot credentials) instead")
        image = None
    elif image is not None and (reason := _interpolated_problem(image, "image")):
        chk.fail("image", f"invalid image: {reason}", "an image reference has no spaces or shell characters")
        image = None
    setup = data.get("setup")
    if isinstance(setup, list):  # commands: the run table's, not this description
        chk.fail("setup", "top-level 'setup' is a description of what the image provides (as in the "
                 "reference) and is never run", "put commands in [tool.runspec.run] setup = [...]")
        setup = None
    else:
        setup = chk.string(data, "setup", "setup", None)

    run_t = chk.table(data, "run")
    chk.unknown_keys(run_t, RUN_KEYS, "run.")
    launch = chk.string(run_t, "launch", "run.launch", _RUN.launch)
    if launch not in LAUNCH_VALUES:
        canonical = LAUNCH_SYNONYMS.get(launch)  # type: ignore[arg-type]
        if canonical is not None:
            launch = canonical
        else:
            chk.fail("run.launch", f"invalid run.launch {launch!r}",
                     did_you_mean(str(launch), (*LAUNCH_VALUES, *LAUNCH_SYNONYMS), listing=True))
            launch = _RUN.launch
    cmd = chk.string(run_t, "cmd", "run.cmd", None)
    for name, problem in template_problems(cmd or ""):
        chk.fail("run.cmd", problem,
                 did_you_mean(name, tuple(PLACEHOLDERS), listing=True) + "; write {{ and }} for literal braces")
    run = RunspecRun(
        launch=launch,  # type: ignore[arg-type]
        cmd=cmd,
        workdir=chk.string(run_t, "workdir", "run.workdir", None),
        setup=_setup_commands(chk, run_t),
    )

    cfg_t = chk.table(data, "config")
    chk.unknown_keys(cfg_t, CONFIG_KEYS, "config.")
    config = RunspecConfig(
        dir=chk.string(cfg_t, "dir", "config.dir", _CONFIG.dir),  # type: ignore[arg-type]
        default=chk.string(cfg_t, "default", "config.default", _CONFIG.default),  # type: ignore[arg-type]
        format=chk.string(cfg_t, "format", "config.format", _CONFIG.format),  # type: ignore[arg-type]
        declared="dir" in cfg_t or "default" in cfg_t,
    )

    res_t = chk.table(data, "resources")
    chk.unknown_keys(res_t, RESOURCES_KEYS, "resources.")
    resources = RunspecResources(
        nodes=chk.count(res_t, "nodes", "resources.nodes", _RESOURCES.nodes),
        # 0 is allowed: CPU-only stages (Ray data prep) declare gpus_per_node = 0.
        # "gpu" (the reference's recipes write it): every GPU of the node, as the profile says.
        gpus_per_node=None if res_t.get("gpus_per_node") == ALL_NODE_GPUS else chk.count(
            res_t, "gpus_per_node", "resources.gpus_per_node", _RESOURCES.gpus_per_node, minimum=0),
    )

    env_t = chk.table(data, "env")
    env: dict[str, str] = {}
    for var, value in env_t.items():
        key = f"env.{var}"
        if not _ENV_NAME.fullmatch(var):
            chk.fail(key, f"invalid environment variable name {var!r}",
                     "use letters, digits and '_', not starting with a digit")
        elif not isinstance(value, str):
            chk.fail(key, f"'{key}' must be a string, got {_type_name(value)}",
                     _quote_hint(value) or "environment values are strings")
        elif problem := _dollar_problem(value):
            chk.fail(key, f"'{key}': {problem}", "write $$ for a literal $; see \"$ in values\" in docs/env-toml.md")
        else:
            env[var] = value

    scales = read_entries(data.get("scales"), chk.fail)
    if chk.errors:
        return None, chk.errors
    spec = Runspec(name=name, script_path=Path(script_path), schema=schema, docs=docs,  # type: ignore[arg-type]
                   image=image, setup=setup, run=run, config=config, resources=resources, env=env,
                   scales=scales)
    return spec, []


_OC_ENV = re.compile(r"(?<!\\)\$\{oc\.env:[^}]*\}")


def _interpolated_problem(value: str, kind: str) -> str | None:
    """Why ``value`` (a runspec value nemo-run pastes into the batch script) is refused: a
    resolver other than ``${oc.env:...}``, or, with those stood in for by a plain word (they
    are resolved when the job is built, and the result is checked again), a character its
    Slurm meaning cannot hold."""
    from nemo_runspec.dollar import resolver_problem

    problem = resolver_problem(value)
    if problem is not None:
        return problem
    reason = script_values.problem(kind, _OC_ENV.sub("x", value))
    return reason.replace(repr(_OC_ENV.sub("x", value)), repr(value), 1) if reason else None


def _dollar_problem(value: str) -> str | None:
    from nemo_runspec.dollar import env_value_problem, resolver_problem

    return resolver_problem(value) or env_value_problem(_OC_ENV.sub("x", value))


def _setup_commands(chk: Any, run_t: Mapping[str, Any]) -> tuple[str, ...]:
    """``run.setup``: one string of shell lines, or a list of commands."""
    value = run_t.get("setup")
    if value is None:
        return ()
    if isinstance(value, str) and value.strip():
        return (value.rstrip("\n"),)
    if isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value):
        return tuple(value)
    chk.fail("run.setup", f"'run.setup' must be shell commands (a string or a list of strings), "
             f"got {value!r}", 'e.g. setup = ["pip install -e .", "export X=1"]')
    return ()


def _load_table(text: str, path: str) -> tuple[Any, _Locator]:
    block = find_block(text, path)
    try:
        data = tomllib.loads("\n".join(block.lines) + "\n")
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise RunspecError(f"invalid TOML in '# /// {BLOCK_TYPE}' block: values nested too deeply",
                           path=path, line=block.script_line(deepest_line("\n".join(block.lines))),
                           hint="a runspec value needs a few levels of nesting at most") from None
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        line = block.opener_line
        hint = None
        m = _TOML_POS.search(msg)
        if m:
            line = block.script_line(int(m.group(1)))
            hint = f"column {int(m.group(2)) + 2}"
            msg = msg[: m.start()]
        else:
            m = _TOML_EOD.search(msg)
            if m:
                line = block.opener_line + max(len(block.lines), 1)
                msg = msg[: m.start()] + " at the end of the block"
        raise RunspecError(
            f"invalid TOML in '# /// {BLOCK_TYPE}' block: {msg}", path=path, line=line, hint=hint
        ) from None
    loc = _Locator(block)
    tool = data.get("tool")
    runspec = tool.get("runspec", _MISSING) if isinstance(tool, dict) else _MISSING
    if runspec is _MISSING:
        raise RunspecError(
            f"'# /// {BLOCK_TYPE}' block at line {block.opener_line} has no [tool.runspec] table",
            path=path,
            line=block.opener_line,
            hint="add '# [tool.runspec]' with at least a name inside the block",
        )
    if not isinstance(runspec, dict):
        raise RunspecError(
            f"'tool.runspec' must be a table, got {_type_name(runspec)}",
            path=path,
            line=loc.line(None),
            hint="write it as [tool.runspec]",
        )
    return runspec, loc


def _errors_and_spec(
    text: str, path: str, script_path: str
) -> tuple[Runspec | None, list[RunspecError]]:
    try:
        data, loc = _load_table(text, path)
    except RunspecError as exc:
        return None, [exc]
    return _validate(data, path, script_path, loc)


# --------------------------------------------------------------------------- public API

def parse_text(text: str, path: str | PathLike[str] = "<string>") -> Runspec:
    """Parse and validate the ``[tool.runspec]`` table in a script's ``text``.

    ``path`` names the script in error messages and anchors ``script_path`` and
    ``config_dir`` (relative paths are made absolute against the current
    directory). Raises :class:`RunspecError` for every problem; when the table
    has several problems the first one found is raised (unknown keys first).
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_text() needs str, got {type(text).__name__}")
    shown = os.fspath(path)
    spec, errors = _errors_and_spec(text, shown, os.path.abspath(shown))
    if errors:
        raise _first(errors)
    return spec  # type: ignore[return-value]


def collect_errors(path: str | PathLike[str]) -> list[RunspecError]:
    """Every problem in the script at ``path`` (empty list when it is valid).

    Unlike :func:`parse`, which stops at the first problem, this reports all
    validation problems of the table (block-level problems such as invalid TOML
    are still a single error). Not cached. Used by ``nemotron runspec validate``.
    """
    shown = _as_path(path, "collect_errors")
    try:
        text, real = _read(shown)
    except RunspecError as exc:
        return [exc]
    return sorted(_errors_and_spec(text, shown, real)[1], key=lambda e: e.line or 0)


def _first(errors: list[RunspecError]) -> RunspecError:
    # Check order, not line order: an unknown key (e.g. 'nam', "did you mean
    # 'name'?") explains a later "missing 'name'" better than the reverse.
    return errors[0]


def _read(shown: str) -> tuple[str, str]:
    from nemo_runspec.files import read_bytes

    real = os.path.realpath(shown)
    raw = read_bytes(shown, what="script", error=RunspecError)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise RunspecError("script is not valid UTF-8", path=shown, line=line) from None
    return text, real


def _as_path(path: Any, caller: str) -> str:
    """``path`` (``str`` or ``os.PathLike``) as a string; anything else is a TypeError saying what it got."""
    if isinstance(path, str):
        return path
    if isinstance(path, (PathLike, bytes)):
        return os.fsdecode(path)
    raise TypeError(f"{caller}() takes the path of a script (str or os.PathLike), got "
                    f"{type(path).__name__} {path!r:.60}")


_CACHE: dict[tuple[str, int, int], Runspec] = {}
_CACHE_MAX = 4096


def parse(path: str | PathLike[str]) -> Runspec:
    """Parse the ``[tool.runspec]`` metadata of the recipe script at ``path``.

    Results are cached on ``(realpath, mtime_ns, size)``: asking again for an
    unchanged file is a dictionary lookup, and an edited file is re-parsed.
    ``script_path`` is the resolved (symlink-free) absolute path and
    ``config_dir`` is resolved against its directory. Raises
    :class:`RunspecError` for a missing/unreadable file or invalid metadata.
    """
    shown = _as_path(path, "parse")
    real = os.path.realpath(shown)
    try:
        st = os.stat(real)
    except OSError:
        st = None
    if st is not None:
        key = (real, st.st_mtime_ns, st.st_size)
        hit = _CACHE.get(key)
        if hit is not None:
            return hit
    text, real = _read(shown)
    spec, errors = _errors_and_spec(text, shown, real)
    if errors:
        raise _first(errors)
    if st is not None:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = spec  # type: ignore[assignment]
    return spec  # type: ignore[return-value]


def clear_cache() -> None:
    """Forget every cached :func:`parse` result."""
    _CACHE.clear()


parse.cache_clear = clear_cache  # type: ignore[attr-defined]
