"""Every point's saved configs, derived from one compiled job of its allocation shape.

Compiling a job takes tens of milliseconds (OmegaConf), so a 100-point sweep
compiled point by point would spend seconds before its one ``sbatch``. Points
that differ only in training keys (not ``run.*``, not ``-c``) share everything
but their configs, so one of them (the *representative*) is compiled by its
recipe command, with every check that command makes, and each other point's
``job.yaml``/``train.yaml`` is derived from that job's config: its swept
overrides applied with the same override code on plain data
(:func:`~nemo_runspec.config.overrides.apply_to_data`), then redacted and
written as :func:`~nemo_runspec.config.jobdir.render_configs` writes them
(``tests/nemo_runspec/sweep/test_points.py`` compares the two byte for byte).

A derived point whose environment for the job differs from its
representative's (W&B switched on by a swept key, say) cannot share its batch
script: :func:`derive` reports it, and the sweep compiles it as the
representative of an allocation shape of its own.
"""

from __future__ import annotations

import contextlib
import copy
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nemo_runspec.config.sweep import Point

if TYPE_CHECKING:
    from nemo_runspec.job.compiled import CompiledJob


@dataclass
class PointJob:
    """A point with its saved configs: ``files`` maps ``job.yaml``/``train.yaml`` to text."""

    point: Point
    files: dict[str, str] = field(default_factory=dict)


def is_run_key(raw_key: str) -> bool:
    """True for keys that shape the job itself (``run.*``): points differing there are
    compiled on their own (their resources, image or environment may differ)."""
    return raw_key == "run" or raw_key.startswith("run.")


def shape_of(point: Point) -> tuple[tuple[str, str], ...]:
    """What decides a point's allocation shape, as far as the command line tells:
    its ``-c`` and its swept ``run.*`` values."""
    return tuple((k, v) for k, v in point.values.items() if k == "config" or is_run_key(k))


def sweep_meta(sweep_id: str, point: Point) -> dict[str, Any]:
    """``run.sweep`` of a point's job config: which sweep, which point, its swept values."""
    from nemo_runspec.secrets import redact_text

    return {"id": sweep_id, "index": point.index,
            "values": {k: redact_text(str(v)) for k, v in point.values.items()}}


def _prefixes(overrides: Sequence[str]) -> dict[str, str]:
    out = {}
    for raw in overrides:
        prefix = "++" if raw.startswith("++") else "+" if raw.startswith("+") else ""
        out[raw[len(prefix):].partition("=")[0].strip()] = prefix
    return out


def point_data(base: Mapping[str, Any], point: Point, sweep_id: str) -> dict[str, Any]:
    """The job config (plain data) of ``point``: ``base`` (its representative's, with the
    representative's values applied) with the point's swept training keys applied."""
    from nemo_runspec.config.overrides import apply_to_data

    data = copy.deepcopy(dict(base))
    prefixes = _prefixes(point.overrides)
    ops = []
    for key, value in point.values.items():
        if key == "config" or is_run_key(key):
            continue  # the same for every point of this shape: already in base
        # `+key=v` added the key to base already: set it again (`++`)
        ops.append(f"{'++' if prefixes.get(key) else ''}{key}={value}")
    if ops:
        apply_to_data(data, ops)
    run = data.setdefault("run", {})
    cli = run.get("cli")
    if isinstance(cli, dict):
        cli["overrides"] = list(point.overrides)
    run["sweep"] = sweep_meta(sweep_id, point)
    return data


def render_point(data: dict[str, Any], cache: dict[Any, str] | None = None,
                 names: tuple[str, ...] = ("job.yaml", "train.yaml")) -> dict[str, str]:
    """``{"job.yaml", "train.yaml"}`` of a job config's plain data, redacted, as
    :func:`~nemo_runspec.config.jobdir.render_configs` renders a compiled job's.

    A block mapping's YAML is its entries' YAML one after the other, so each top-level
    entry is rendered once per distinct value (``cache``, shared by the points of a
    sweep, which differ in one or two entries)."""
    import json

    import yaml

    from nemo_runspec.config.job_config import not_secret_values, train_data
    from nemo_runspec.config.jobdir import redact_config
    from nemo_runspec.secrets import find_secret_values

    with contextlib.redirect_stderr(io.StringIO()):  # its warnings were said for the representative
        train = train_data(copy.deepcopy(data), for_remote=True)
    values = find_secret_values(data, train)
    allow = not_secret_values(data)
    cache = {} if cache is None else cache
    context = (tuple(values), tuple(allow))

    def dump(obj: dict[str, Any]) -> str:
        parts = []
        for key, value in obj.items():
            ident = (context, key, json.dumps(value, default=repr))
            text = cache.get(ident)
            if text is None:
                text = cache[ident] = yaml.dump(redact_config({key: value}, values, allow), default_flow_style=False,
                                                allow_unicode=True, sort_keys=False, Dumper=_dumper())
            parts.append(text)
        return "".join(parts) or "{}\n"

    return {name: dump(data if name == "job.yaml" else train) for name in names}


_DUMPER: type | None = None


def _dumper() -> type:
    """OmegaConf's YAML dumper (its quoting of strings that would read back as other
    types), on libyaml's emitter when PyYAML has it: the same text, several times faster."""
    global _DUMPER
    if _DUMPER is None:
        import yaml
        from omegaconf._utils import OmegaConfDumper, get_omega_conf_dumper

        _DUMPER = get_omega_conf_dumper()
        if getattr(yaml, "__with_libyaml__", False):
            class _Fast(yaml.CDumper):  # type: ignore[misc, name-defined]
                pass

            _Fast.add_representer(str, OmegaConfDumper.str_representer)
            _DUMPER = _Fast
    return _DUMPER


def env_split(job: CompiledJob, data: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """The job's environment (plain, secrets) for a point's job config ``data``."""
    from nemo_runspec.execution.env_vars import split_env_vars

    return split_env_vars(data, job.run_env, runspec=job.runspec,
                          wandb_section=job.sections.get("wandb"), registry=job.registry)


def derive(job: CompiledJob, points: Sequence[Point], sweep_id: str,
           names: tuple[str, ...] = ("job.yaml", "train.yaml")) -> tuple[list[PointJob], list[Point]]:
    """``(point jobs, points that need a shape of their own)`` for ``points`` of the
    representative ``job``'s shape (the representative is ``points[0]``), with the files
    ``names`` rendered."""
    from omegaconf import OmegaConf

    base = OmegaConf.to_container(job.job_config, resolve=False)
    assert isinstance(base, dict)
    reference = env_split(job, point_data(base, points[0], sweep_id))
    done: list[PointJob] = []
    apart: list[Point] = []
    cache: dict[Any, str] = {}
    for point in points:
        data = point_data(base, point, sweep_id)
        if point is not points[0] and env_split(job, data) != reference:
            apart.append(point)
            continue
        done.append(PointJob(point, render_point(data, cache, names)))
    return done, apart
