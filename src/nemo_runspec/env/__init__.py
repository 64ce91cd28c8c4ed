"""env.toml execution profiles: discovery, loading, ``extends`` inheritance, validation.

An ``env.toml`` holds named execution profiles (one TOML table each) that the
CLI selects with ``--run PROFILE`` / ``--batch PROFILE``, plus four special
sections that are not profiles: ``[wandb]``, ``[cli]``, ``[cache]`` and
``[artifacts]``. See ``docs/env-toml.md`` for every key.

Every problem is an :class:`~nemo_runspec.errors.EnvFileError` whose one-line
text names the file, the line and the key.

=====================  ====================================================
module                 holds
=====================  ====================================================
``env.discovery``      which file: ``--env-file`` > ``$NEMOTRON_ENV_FILE`` > nearest
``env.file``           :class:`EnvFile` (TOML + key lines), ``${oc.env:...}``
``env.profile``        :class:`EnvProfile`, :class:`Source`, ``extends``
``env.sections``       ``[wandb]``, ``[artifacts]``, ``[cache]``, ``[cli]``
``env.validation``     pydantic errors -> one-line :class:`EnvFileError`
``env.model``          the pydantic models (the single list of known keys)
``env.resources``      the ``nproc_per_node`` / ``gpus_per_node`` rule
``env.reference``      the reference system's forms (``container``, ``env_vars`` lists, ...)
=====================  ====================================================

Only the standard library is imported here; pydantic is imported on first
validation so that ``import nemo_runspec.env`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nemo_runspec._lazy import lazy_exports
from nemo_runspec.errors import EnvFileError

if TYPE_CHECKING:
    from nemo_runspec.env.discovery import ENV_FILE_NAME, ENV_FILE_VAR, ROOT_MARKERS, find_env_file
    from nemo_runspec.env.file import RESERVED_SECTIONS, EnvFile, load_env_file
    from nemo_runspec.env.profile import (
        EnvProfile,
        Source,
        load_env_profile,
        parse_env,
        profile_defaults,
    )
    from nemo_runspec.env.sections import (
        get_artifacts_config,
        get_cache_config,
        get_cli_config,
        get_wandb_config,
        read_sections,
    )
    from nemo_runspec.env.validation import validate_run_env

__all__ = [
    "ENV_FILE_NAME",
    "ENV_FILE_VAR",
    "EnvFile",
    "EnvFileError",
    "EnvProfile",
    "PROFILE_KEYS",
    "RESERVED_SECTIONS",
    "ROOT_MARKERS",
    "Source",
    "find_env_file",
    "get_artifacts_config",
    "get_cache_config",
    "get_cli_config",
    "get_wandb_config",
    "load_env_file",
    "load_env_profile",
    "parse_env",
    "profile_defaults",
    "read_sections",
    "validate_run_env",
]

_getattr, __dir__ = lazy_exports(__name__, {
    "discovery": ["ENV_FILE_NAME", "ENV_FILE_VAR", "ROOT_MARKERS", "find_env_file"],
    "file": ["RESERVED_SECTIONS", "EnvFile", "load_env_file"],
    "profile": ["EnvProfile", "Source", "load_env_profile", "parse_env", "profile_defaults"],
    "sections": ["get_artifacts_config", "get_cache_config", "get_cli_config", "get_wandb_config",
                 "read_sections"],
    "validation": ["validate_run_env"],
}, own=["PROFILE_KEYS"])


def __getattr__(name: str) -> Any:
    if name == "PROFILE_KEYS":
        from nemo_runspec.env.model import EnvProfileModel

        keys = tuple(EnvProfileModel.model_fields)
        globals()["PROFILE_KEYS"] = keys
        return keys
    return _getattr(name)
