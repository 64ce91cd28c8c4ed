"""JSON Schema (draft 2020-12) of the ``[tool.runspec]`` table, schema version 1.

The schema describes the table exactly as it is written in TOML (before
normalisation), so editors and other tools can check recipe metadata without
importing this package. :func:`nemo_runspec.parse` remains the reference: it
applies the same rules and reports file/line/key for every problem.
"""

from __future__ import annotations

import copy
from typing import Any

from nemo_runspec.dollar import ENV_VALUE_PATTERN
from nemo_runspec.spec.models import (
    LAUNCH_SYNONYMS,
    LAUNCH_VALUES,
    RunspecConfig,
    RunspecResources,
    RunspecRun,
)

# Defaults come from the dataclasses (their one home), so the schema cannot drift.
_RUN, _CONFIG, _RESOURCES = RunspecRun(), RunspecConfig(), RunspecResources()

__all__ = ["runspec_json_schema", "SCHEMA_ID"]

SCHEMA_ID = "urn:nemo-runspec:runspec:v1"

_NON_EMPTY = {"type": "string", "minLength": 1, "pattern": r"\S"}


def _string(description: str, default: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {**_NON_EMPTY, "description": description}
    if default is not None:
        out["default"] = default
    return out


def _count(description: str, default: int, minimum: int = 1) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "default": default, "description": description}


_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SCHEMA_ID,
    "title": "[tool.runspec] (runspec v1)",
    "description": (
        "Recipe metadata carried in the [tool.runspec] table of a PEP 723 "
        "'# /// script' block."
    ),
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "schema": {
            "description": "Runspec schema version; only version 1 exists (string or integer).",
            "enum": ["1", 1],
            "default": "1",
        },
        "docs": _string("Link to (or short text of) the recipe's documentation."),
        "name": _string("Recipe identity, e.g. 'nano3/pretrain'; used for job names and dirs."),
        "image": _string("Container image the recipe runs in; absent means bare metal."),
        "setup": _string("Human-readable description of what the image provides or needs (as in the "
                         "reference); never run: commands go in run.setup."),
        "run": {
            "type": "object",
            "description": "How the script is started.",
            "additionalProperties": False,
            "default": {"launch": _RUN.launch},
            "properties": {
                "launch": {
                    "description": (
                        "Launcher: 'torchrun' (one torchrun per node, gpus_per_node "
                        "processes), 'ray' (Ray cluster, the command runs on the head), "
                        "or 'direct' (plain python). 'python' is accepted as a synonym "
                        "of 'direct'."
                    ),
                    "type": "string",
                    "enum": [*LAUNCH_VALUES, *LAUNCH_SYNONYMS],
                    "default": _RUN.launch,
                },
                "cmd": _string("Command replacing 'python {script} --config {config} {args}'; placeholders "
                               "{script}, {config}, {args}, {job_dir} (values shell-quoted)."),
                "workdir": _string("Working directory of setup and the command."),
                "setup": {
                    "description": "Shell commands sourced before the command, in its shell and container "
                                   "(spec section 7): one string of lines, or a list of commands.",
                    "oneOf": [{"type": "string", "minLength": 1},
                              {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}],
                },
            },
        },
        "config": {
            "type": "object",
            "description": "Where the recipe's configs live.",
            "additionalProperties": False,
            "default": _CONFIG.to_dict(),
            "properties": {
                "dir": _string(
                    "Config directory, relative to the script file's directory.", _CONFIG.dir
                ),
                "default": _string(
                    "Config used when -c/--config is not given (name without .yaml).", _CONFIG.default
                ),
                "format": _string("Config format understood by the recipe.", _CONFIG.format),
            },
        },
        "resources": {
            "type": "object",
            "description": "Default resources; env.toml profiles and overrides win.",
            "additionalProperties": False,
            "default": _RESOURCES.to_dict(),
            "properties": {
                "nodes": _count("Number of nodes (at least 1).", _RESOURCES.nodes),
                "gpus_per_node": {
                    "description": "GPUs (and torchrun processes) per node; 0 for CPU-only stages; "
                                   '"gpu" for every GPU of the node, as the env.toml profile states them.',
                    "default": _RESOURCES.gpus_per_node,
                    "oneOf": [{"type": "integer", "minimum": 0}, {"const": "gpu"}],
                },
            },
        },
        "env": {
            "type": "object",
            "description": "Environment variables set for the job (string values).",
            "default": {},
            "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
            # (the one rule for $: nemo_runspec.dollar)
            "additionalProperties": {"type": "string", "pattern": ENV_VALUE_PATTERN},
        },
        "scales": {
            "type": "array",
            "description": "The scale matrix (spec section 8): cells of GPU type x nodes x precision "
                           "the recipe is known to work at, with their config overrides.",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["gpu_types", "nodes", "precisions"],
                "properties": {
                    "configs": {"type": "array", "items": {"type": "string", "minLength": 1}},
                    "gpu_types": {"type": "array", "minItems": 1,
                                  "items": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_.-]*$"}},
                    "nodes": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1}},
                    "exact": {"type": "boolean", "default": True},
                    "precisions": {"type": "array", "minItems": 1,
                                   "items": {"enum": ["bf16", "fp8", "nvfp4", "mxfp8", "fp16", "fp32"]}},
                    "gpus_per_node": {"type": "integer", "minimum": 0},
                    "overrides": {"type": "object"},
                    "image": {"type": "string", "minLength": 1},
                    "note": {"type": "string", "minLength": 1},
                },
            },
        },
    },
}


def runspec_json_schema() -> dict[str, Any]:
    """Return the JSON Schema of the ``[tool.runspec]`` table (a fresh copy each call)."""
    return copy.deepcopy(_SCHEMA)
