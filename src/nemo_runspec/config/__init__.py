"""The config pipeline: YAML loading, overrides, job config, job dirs.

Typical use in a recipe command::

    train_config = parse_config(ctx, SPEC.config_dir, SPEC.config.default)
    job_config = build_job_config(train_config, ctx, SPEC.name, SPEC.script_path,
                                  env_profile=env, runspec=SPEC)
    job_dir = generate_job_dir(SPEC.name)
    with staged_job_dir(job_dir) as tmp:
        save_configs(job_config, extract_train_config(job_config, for_remote=True), tmp)

Importing this package costs OmegaConf only (no pydantic, nemo_run or rich).
"""

from __future__ import annotations

from nemo_runspec.config.job_config import (
    LAUNCHER_ONLY_KEYS,
    build_job_config,
    extract_train_config,
)
from nemo_runspec.config.jobdir import (
    atomic_write_text,
    generate_job_dir,
    redact_config,
    save_configs,
    slugify,
    staged_job_dir,
)
from nemo_runspec.config.loader import (
    LoadedConfig,
    config_info,
    list_configs,
    load_config,
    load_config_file,
    parse_config,
    resolve_config_path,
)
from nemo_runspec.config.overrides import Override, apply_overrides, parse_override, parse_value
from nemo_runspec.config.provenance import collect_provenance, git_info
from nemo_runspec.config.yaml_io import read_yaml

__all__ = [
    "LAUNCHER_ONLY_KEYS",
    "LoadedConfig",
    "Override",
    "apply_overrides",
    "atomic_write_text",
    "build_job_config",
    "collect_provenance",
    "config_info",
    "extract_train_config",
    "generate_job_dir",
    "git_info",
    "list_configs",
    "load_config",
    "load_config_file",
    "parse_config",
    "parse_override",
    "parse_value",
    "read_yaml",
    "redact_config",
    "resolve_config_path",
    "save_configs",
    "slugify",
    "staged_job_dir",
]
