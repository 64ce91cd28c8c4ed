"""Version arithmetic and the installed versions of the libraries, with nothing imported.

A leaf of :mod:`nemotron.training`: the table (:mod:`.versions`), the API lines
(:mod:`.bridge_lines`, :mod:`.rl_lines`) and the job's check (:mod:`.version_check`)
all use it. An installed library is located with ``find_spec`` (its ``__init__``, which
for Megatron-Bridge pulls in transformer-engine and takes tens of seconds, is not run)
and its ``package_info.py`` parsed; a package without one falls back to its
distribution metadata.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the importable module of each distribution the table tracks
MODULES = {"megatron-bridge": "megatron.bridge", "megatron-core": "megatron.core", "nemo-rl": "nemo_rl",
           "nemo-evaluator": "nemo_evaluator", "nemo-evaluator-launcher": "nemo_evaluator_launcher"}


_VERSION = re.compile(r"^\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[.-]?(a|b|rc|alpha|beta|dev)\.?(\d*))?")
_PRE = {"dev": 0, "a": 1, "alpha": 1, "b": 2, "beta": 2, "rc": 3}


def parse_version(text: str) -> tuple[int, int, int, int, int]:
    """A sortable key of a version string: ``0.3.0rc0`` < ``0.3.0`` < ``0.3.1+abc``.

    The PEP 440 subset these libraries use (release, ``aN``/``bN``/``rcN``/``devN``,
    a ``+local`` part ignored). Raises ValueError for text that is not a version.
    """
    m = _VERSION.match(text or "")
    if not m:
        raise ValueError(f"not a version: {text!r}")
    major, minor, patch, pre, pre_n = m.groups()
    rank = _PRE[pre] if pre else 9  # a final release sorts after its pre-releases
    return int(major), int(minor or 0), int(patch or 0), rank, int(pre_n or 0)


def in_range(version: str, since: str, until: str | None) -> bool:
    """``since <= version < until`` (``until`` None: no upper bound)."""
    key = parse_version(version)
    return parse_version(since) <= key and (until is None or key < parse_version(until))


def range_text(since: str, until: str | None) -> str:
    """``0.3.0rc0 to 0.6.x`` for ``since <= v < 0.7.0``, for messages."""
    if until is None:
        return f"{since} or newer"
    major, minor = until.split(".")[:2]
    return f"{since} to {major}.{int(minor) - 1}.x"


@dataclass(frozen=True)
class Found:
    """An installed library: its version and where that was read."""

    dist: str
    version: str
    where: str


def _package_info_version(path: Path) -> str | None:
    import ast  # here, not at the top: a recipe command's --help imports this module

    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    consts: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    consts[target.id] = node.value.value
    if "MAJOR" in consts:
        return f"{consts['MAJOR']}.{consts.get('MINOR', 0)}.{consts.get('PATCH', 0)}{consts.get('PRE_RELEASE') or ''}"
    version = consts.get("__version__")
    return version if isinstance(version, str) else None


def installed_version(dist: str) -> Found | None:
    """The version of ``dist`` importable here, without importing it (None: not installed)."""
    import importlib.metadata  # here, not at the top: a recipe command's --help imports this module
    import importlib.util

    module = MODULES.get(dist, dist.replace("-", "_"))
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return None
    for location in spec.submodule_search_locations or ():
        info = Path(location) / "package_info.py"
        version = _package_info_version(info) if info.is_file() else None
        if version:
            return Found(dist, version, str(info))
    try:
        return Found(dist, importlib.metadata.version(dist), f"{dist} distribution metadata")
    except importlib.metadata.PackageNotFoundError:
        return None


def installed_line(dist: str, line_for: Any) -> Any:
    """The API line (``line_for(version)``) of the installed ``dist``; a one-line error when it is
    missing or outside every line (the job's first check has refused that already at start)."""
    from nemo_runspec.errors import ConfigError

    found = installed_version(dist)
    line = line_for(found.version) if found else None
    if line is None:
        raise ConfigError(f"{dist} {found.version if found else '(not found)'} is not a supported release",
                          hint="see docs/training.md, 'Images and versions'")
    return line
