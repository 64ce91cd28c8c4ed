"""A job's identity from its saved ``job.yaml`` and ``packaging.json``.

``job.yaml`` (:func:`nemo_runspec.config.save_configs`, redacted) holds the
command line (``run.cli``), the profile and every execution setting with where
it came from (``run.env``, ``run.env_sources``), the recipe and the provenance;
``run.<key>`` entries such as ``run.data: nano3-pretrain-data-tiny:latest`` name
the artifacts the config consumes through ``${art:<key>,...}``.
``packaging.json`` (:class:`nemo_runspec.packaging.manifest.PackagingPlan`)
holds the packaged code's hash and commit.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nemo_runspec.report.model import ArtifactLink, Identity, Setting

#: top-level fields of packaging.json a report shows
CODE_FIELDS = ("archive_sha256", "commit", "branch", "dirty", "fingerprint", "kind", "script", "diff_sha256")
_ART_KEY = re.compile(r"\$\{art:(\w+)")
#: ``run:`` keys that are the launcher's own, never an artifact reference
_RUN_OWN = {"env", "mode", "profile", "dry_run", "recipe", "env_sources", "cli", "provenance", "wandb",
            "not_secret"}


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping | list):
        return json.dumps(value, sort_keys=True)
    return "" if value is None else str(value)


def _flatten(prefix: str, value: object, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping) and value:
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = value


def from_job_yaml(text: str) -> Identity:
    """The identity a saved ``job.yaml`` records (empty fields where it says nothing)."""
    import yaml

    data = yaml.safe_load(text) if text.strip() else None
    if not isinstance(data, Mapping):
        return Identity()
    run = data.get("run") if isinstance(data.get("run"), Mapping) else {}
    cli = run.get("cli") if isinstance(run.get("cli"), Mapping) else {}
    recipe = run.get("recipe") if isinstance(run.get("recipe"), Mapping) else {}
    env = run.get("env") if isinstance(run.get("env"), Mapping) else {}
    sources = run.get("env_sources") if isinstance(run.get("env_sources"), Mapping) else {}
    argv = [str(a) for a in cli.get("argv") or []]
    flat: dict[str, Any] = {}
    _flatten("", env, flat)
    settings = [Setting(key=k, value=_text(v), source=str(sources.get(k) or sources.get(k.split(".")[0]) or ""))
                for k, v in sorted(flat.items())]
    body = json.dumps({k: v for k, v in data.items() if k != "run"}, default=str)
    used = set(_ART_KEY.findall(body))
    consumed = [ArtifactLink(ref=str(v), key=k) for k, v in run.items()
                if k not in _RUN_OWN and k in used and isinstance(v, str | int)]
    return Identity(
        command=("nemotron " + shlex.join(argv)) if argv else "",
        recipe=str(recipe.get("name") or ""),
        config=str(cli.get("config") or ""),
        overrides=[str(o) for o in cli.get("overrides") or []],
        profile=str(run.get("profile") or ""),
        settings=settings,
        image=str(env.get("container_image") or ""),
        consumed=consumed,
        provenance=dict(run.get("provenance") or {}) if isinstance(run.get("provenance"), Mapping) else {},
    )


def code_of(path: str | Path) -> dict[str, Any]:
    """The :data:`CODE_FIELDS` of a ``packaging.json`` (empty when there is none)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, Mapping):
        return {}
    return {k: data[k] for k in CODE_FIELDS if data.get(k) not in (None, "")}
