"""Reading YAML the way OmegaConf does (``1e-4`` is a float, duplicate keys are errors).

Shared by the config loader and the override parser; errors are one-line
:class:`~nemo_runspec.errors.ConfigError` with the file and line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from nemo_runspec.errors import ConfigError


def yaml_loader() -> type:
    """The YAML loader OmegaConf uses (``1e-4`` is a float, duplicate keys are errors)."""
    from omegaconf._yaml import get_yaml_loader  # omegaconf 2.4 (pinned in pyproject.toml)

    return get_yaml_loader()


def read_yaml(path: str | os.PathLike[str]) -> tuple[dict[str, Any], str]:
    """Parse one YAML file into a dict (``{}`` when empty); returns ``(data, text)``.

    Syntax errors and duplicate keys become :class:`ConfigError` with the line;
    so do a file that cannot be read (a directory, no permission) and one that
    is not UTF-8 text (the line of the first bad byte).
    """
    from nemo_runspec.files import read_bytes

    p = Path(path)
    raw = read_bytes(p, what="config", error=ConfigError)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"not UTF-8 text (byte 0x{raw[exc.start]:02x}: {exc.reason})",
            path=p, line=line, hint="save the file as UTF-8",
        ) from None
    try:
        data = yaml.load(text, Loader=yaml_loader())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = " ".join(x for x in (exc.context, exc.problem) if x) or "invalid YAML"
        raise ConfigError(f"invalid YAML: {problem}", path=p, line=line) from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", path=p) from exc
    if data is None:
        return {}, text
    if not isinstance(data, dict):
        raise ConfigError(
            f"a config must be a mapping at the top level, not a {type(data).__name__}", path=p, line=1
        )
    return data, text


def to_yaml(data: object) -> str:
    """Block-style YAML of plain data, keys in their original order."""
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)
