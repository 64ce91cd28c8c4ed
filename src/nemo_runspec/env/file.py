"""An env.toml file as parsed: profiles and special sections, with the line of every key.

Also the ``${oc.env:VAR}`` / ``${oc.env:VAR,default}`` interpolation applied to
profile and section values when they are loaded. Standard library only.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nemo_runspec.env.discovery import CREATE_HINT, find_env_file, not_found_error
from nemo_runspec.errors import EnvFileError
from nemo_runspec.spec.toml_lines import deepest_line, line_map

RESERVED_SECTIONS = ("wandb", "cli", "cache", "artifacts")


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

    # Read-only mapping access, as the reference's ``load_env_file()`` dict:
    # ``ef["dev"]`` is the table as written, ``"wandb" in ef``, ``list(ef)``.
    # (No ``__len__``: an EnvFile with no profiles stays truthy.)
    def _tables(self) -> dict[str, dict[str, Any]]:
        return {**self.profiles, **{k: v for k, v in self.sections.items() if v}}

    def __getitem__(self, name: str) -> dict[str, Any]:
        tables = self._tables()
        if name in tables:
            return tables[name]
        if name in self.sections:
            return self.sections[name]
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tables()

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables())

    def keys(self) -> list[str]:
        """Profile names, then the special sections present in the file."""
        return list(self._tables())

    def items(self) -> list[tuple[str, dict[str, Any]]]:
        """``(name, table)`` pairs, as :meth:`keys`."""
        return list(self._tables().items())

    def get(self, name: str, default: object = None) -> Any:
        """The table ``name`` as written, else ``default``."""
        return self._tables().get(name, default)


_TOML_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_TOML_END = re.compile(r"\s*\(at end of document\)\s*$")



def load_env_file(path: str | os.PathLike[str] | None = None) -> EnvFile:
    """Read and parse an env.toml (profiles are validated when they are loaded).

    Without ``path`` the file is found as everywhere else
    (:func:`~nemo_runspec.env.discovery.find_env_file`: ``$NEMOTRON_ENV_FILE``,
    then the nearest ``env.toml`` up to the project root); none found is an
    :class:`EnvFileError` saying where we looked.
    TOML syntax errors, non-table top-level entries and unreadable files are
    :class:`EnvFileError` with the path and line.
    """
    if path is None:
        path = find_env_file()
        if path is None:
            raise not_found_error(None)
    path = Path(path)
    from nemo_runspec.files import read_bytes

    try:
        raw = read_bytes(path, what="env file", error=EnvFileError)
    except EnvFileError as exc:
        if exc.problem == "env file not found":
            raise EnvFileError(f"env file {str(path)!r} does not exist", path=path, hint=CREATE_HINT) from None
        raise
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise EnvFileError(f"not UTF-8 text ({exc.reason})", path=path, line=line,
                           hint="save the file as UTF-8") from None
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
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise EnvFileError("invalid TOML: values nested too deeply", path=path, line=deepest_line(text),
                           hint="an env.toml value needs a few levels of nesting at most") from None
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
# `$(hostname)`) is left for the shell on the cluster, and another resolver is
# refused (nemo_runspec.dollar, the one rule). `\${oc.env:X}` keeps the text
# literally (minus the backslash).
_OC_ENV = re.compile(r"(\\)?\$\{oc\.env:([^,}]*)(?:,([^}]*))?\}")


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def interpolate(
    value: object, keypath: tuple[str, ...], where: Callable[[tuple[str, ...]], tuple[str, int | None]]
) -> Any:
    """Resolve ``${oc.env:...}`` inside every string of ``value`` (nested)."""
    if isinstance(value, dict):
        return {k: interpolate(v, (*keypath, k), where) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, keypath, where) for v in value]
    if not isinstance(value, str) or "${" not in value:
        return value
    from nemo_runspec.dollar import resolver_problem

    problem = resolver_problem(value.replace("${auto_mount:", "\\${auto_mount:") if keypath[:1] == ("mounts",)
                               else value)
    if problem is not None:
        path, line = where(keypath)
        dotted = ".".join(keypath)
        raise EnvFileError(f"key {dotted!r}: {problem}", path=path, line=line, key=dotted,
                           hint="a $ form other than ${oc.env:...} is the job's shell's: see \"$ in values\" in "
                                "docs/env-toml.md")

    # An environment value is data: in an env var's value (where $ is the job's shell's) its $ is doubled.
    in_env = keypath[:1] in (("env_vars",), ("env",))

    def data(text: str) -> str:
        return text.replace("$", "$$") if in_env else text

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
            return data(os.environ[var])
        if m.group(3) is not None:
            return data(_unquote(m.group(3)))
        raise EnvFileError(
            f"key {dotted!r}: environment variable {var} is not set",
            path=path,
            line=line,
            key=dotted,
            hint=f"export {var}=..., or give a default: ${{oc.env:{var},DEFAULT}}",
        )

    return _OC_ENV.sub(repl, value)


def where_in(ef: EnvFile, table: str) -> Callable[[tuple[str, ...]], tuple[str, int | None]]:
    """``keypath -> (file, line)`` for keys of ``[table]`` (a profile or a special section)."""
    return lambda keypath: (str(ef.path), ef.line_of(table, *keypath))
