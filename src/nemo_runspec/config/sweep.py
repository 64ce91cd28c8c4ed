"""A multirun command line, expanded into its points before any override is applied.

``nemotron nano3 pretrain -c tiny -m train.train_iters=10,20 optimizer.lr=range(1,3)``
is four runs: the product of the swept values, the first override varying slowest
(Hydra's order). :func:`expand` turns the overrides (and ``-c``) into
:class:`Point`\\ s, each an ordinary override list that the usual override code
applies (:mod:`nemo_runspec.config.overrides`); nothing else knows about sweeps.

Without ``-m``, :func:`refuse_unmarked_sweeps` makes ``train.train_iters=10,20``
a one-line error suggesting ``-m`` when the key holds a number, a bool, a list or a
mapping (for a text key, ``name=a,b`` stays the text ``a,b``, as before).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nemo_runspec.config.sweep_grammar import Sweep, is_sweep, parse_sweep
from nemo_runspec.errors import ConfigError


@dataclass(frozen=True)
class Point:
    """One run of a sweep: its index, its override list, and the swept values."""

    index: int
    overrides: tuple[str, ...]
    #: ``{key: value text}`` of the swept overrides only (``-c`` is ``config``)
    values: Mapping[str, str] = field(default_factory=dict)
    config: str | None = None

    def label(self) -> str:
        """``train.train_iters=10 optimizer.lr=1`` (the swept values, for tables)."""
        return " ".join(f"{k}={v}" if k != "config" else f"-c {v}" for k, v in self.values.items())


@dataclass(frozen=True)
class SweepPlan:
    """The points of a command line, and what was swept (in command-line order)."""

    points: tuple[Point, ...]
    keys: tuple[str, ...]

    def key(self, *parts: str) -> str:
        """A stable identity of this sweep (its command line and ``parts``): the same
        command gives the same key, so a rerun finds the points that already ran."""
        text = json.dumps([list(parts), [list(p.overrides) for p in self.points],
                           [p.config for p in self.points]], separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def _split(raw: str) -> tuple[str, str, str | None]:
    """``(prefix, key, value text)`` of an override; value None for ``~key``."""
    prefix = "++" if raw.startswith("++") else "+" if raw.startswith("+") else "~" if raw.startswith("~") else ""
    body = raw[len(prefix):]
    key, eq, value = body.partition("=")
    return prefix, key.strip(), value if eq else None


def swept(overrides: Sequence[str]) -> list[tuple[int, str, Sweep]]:
    """``(position, key, sweep)`` of every override whose value is a sweep."""
    out = []
    for pos, raw in enumerate(overrides):
        prefix, key, value = _split(raw)
        if value is None:
            continue
        sweep = parse_sweep(value, where=f"override {raw!r}")
        if sweep is None:
            continue
        if prefix == "~":
            raise ConfigError(f"cannot sweep a deletion: {raw!r}", key=key,
                              hint="~KEY deletes a key; sweep KEY=a,b instead")
        out.append((pos, key, sweep))
    return out


def expand(overrides: Sequence[str], *, config: str | None = None,
           config_names: Sequence[str] | None = None) -> SweepPlan:
    """The points of ``overrides`` (and of ``config``, the ``-c`` value, which may be a
    sweep over ``config_names`` too: ``tiny,default`` or ``glob(tiny*)``).

    Raises a one-line :class:`ConfigError` for a malformed sweep, a key swept twice,
    a glob that matches nothing, and a command line with nothing to sweep.
    """
    overrides = list(overrides)
    found = swept(overrides)
    axes: list[tuple[str, int | None, list[str]]] = []  # (key, position or None for -c, values)
    if config is not None:
        sweep = parse_sweep(config, where=f"-c {config!r}")
        if sweep is not None:
            values = sweep.expand(list(config_names or []))
            if not values:
                raise ConfigError(f"-c {config!r} matches no config", key="config",
                                  hint="configs: " + ", ".join(config_names or []) if config_names else None)
            axes.append(("config", None, values))
    seen: dict[str, str] = {}
    for pos, key, sweep in found:
        bare = key
        if bare in seen:
            raise ConfigError(f"{key} is swept twice ({seen[bare]!r} and {overrides[pos]!r})", key=key,
                              hint="give all its values in one override: key=a,b,c")
        seen[bare] = overrides[pos]
        values = sweep.expand(None)
        if len(set(values)) != len(values):
            dup = next(v for v in values if values.count(v) > 1)
            raise ConfigError(f"override {overrides[pos]!r} lists {dup} twice", key=key,
                              hint="each point would run the same config; list each value once")
        axes.append((key, pos, values))
    if not axes:
        raise ConfigError("-m/--multirun, but no override is a sweep",
                          hint="give a key several values: train.train_iters=10,20 (or range(...), choice(...))")
    points = []
    for index, combo in enumerate(itertools.product(*(values for _, _, values in axes))):
        over = list(overrides)
        chosen: dict[str, str] = {}
        point_config = config
        for (key, pos, _), value in zip(axes, combo, strict=True):
            chosen[key] = value
            if pos is None:
                point_config = value
                continue
            prefix, k, _ = _split(over[pos])
            over[pos] = f"{prefix}{k}={value}"
        points.append(Point(index=index, overrides=tuple(over), values=chosen, config=point_config))
    return SweepPlan(points=tuple(points), keys=tuple(key for key, _, _ in axes))


def refuse_unmarked_sweeps(data: Callable[[], Any], overrides: Sequence[str]) -> None:
    """Without ``-m``: a sweep-shaped value (``10,20``, ``range(...)``) for a key whose
    current value is a number, a bool, a list or a mapping is a one-line error suggesting ``-m``
    (``x=[1,2],[3]`` would otherwise put the text ``[1,2],[3]`` in a list key).

    ``data`` returns the config the overrides apply to, as plain data (called only
    when a value is sweep-shaped). Text keys are left alone: ``name=a,b`` is the
    text ``a,b``.
    """
    plain: list[Any] = []
    for raw in overrides:
        prefix, key, value = _split(raw)
        if value is None or prefix == "~" or not is_sweep(value):
            continue
        if not plain:
            plain.append(data())
        current = _lookup(plain[0], key)
        kind = ("bool" if isinstance(current, bool) else "number" if isinstance(current, (int, float))
                else "list" if isinstance(current, list) else "mapping" if isinstance(current, Mapping) else None)
        if kind is not None:
            now = f"now {current!r}" if kind in ("bool", "number") else f"a {kind} now"
            raise ConfigError(
                f"override {raw!r} gives the {kind} {key} ({now}) several values",
                key=key, hint=f"add -m/--multirun to run one job per value, or give one value: {key}="
                              f"{_first(value)}")


def _first(value: str) -> str:
    try:
        sweep = parse_sweep(value, where="value")
    except ConfigError:
        return value
    return sweep.values[0] if sweep is not None and sweep.values else value


def _lookup(data: object, key: str) -> Any:
    node = data
    for part in key.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node
