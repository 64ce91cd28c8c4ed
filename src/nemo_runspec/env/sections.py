"""The special sections of env.toml: ``[wandb]``, ``[artifacts]``, ``[cache]``, ``[cli]``.

They are not execution profiles: they hold settings every profile shares. Each
accessor takes a path, an already loaded :class:`EnvFile` (what commands pass:
the file is read once per command) or None to discover one.
"""

from __future__ import annotations

import os
from typing import Any

from nemo_runspec._suggest import did_you_mean
from nemo_runspec.env.discovery import find_env_file
from nemo_runspec.env.file import EnvFile, interpolate, load_env_file, where_in
from nemo_runspec.env.validation import validate
from nemo_runspec.errors import EnvFileError

EnvFileArg = str | os.PathLike[str] | EnvFile | None


def _section(name: str, env_file: EnvFileArg) -> tuple[dict[str, Any], EnvFile | None]:
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
    from nemo_runspec.env.model import SECTION_MODELS

    where = where_in(ef, name)
    data = interpolate(raw, (), where)
    validate(data, SECTION_MODELS[name], f"[{name}]", where)
    return data, ef


def get_wandb_config(env_file: EnvFileArg = None) -> dict[str, Any]:
    """The validated ``[wandb]`` section (``{}`` if absent); ``api_key_env`` defaults to WANDB_API_KEY."""
    data, _ = _section("wandb", env_file)
    if data:
        data.setdefault("api_key_env", "WANDB_API_KEY")
    return data


def get_artifacts_config(env_file: EnvFileArg = None) -> dict[str, Any]:
    """The validated ``[artifacts]`` section (``{}`` if absent)."""
    return _section("artifacts", env_file)[0]


def get_cache_config(env_file: EnvFileArg = None) -> dict[str, Any]:
    """The validated ``[cache]`` section (``{}`` if absent)."""
    return _section("cache", env_file)[0]


def get_cli_config(env_file: EnvFileArg = None) -> dict[str, Any]:
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


def read_sections(ef: EnvFile | None) -> dict[str, dict[str, Any]]:
    """All four sections of ``ef``, validated (``{}`` each without a file)."""
    if ef is None:
        return {"wandb": {}, "artifacts": {}, "cache": {}, "cli": {}}
    return {
        "wandb": get_wandb_config(ef),
        "artifacts": get_artifacts_config(ef),
        "cache": get_cache_config(ef),
        "cli": get_cli_config(ef),
    }
