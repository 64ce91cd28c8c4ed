"""Does an override's value fit the key it sets? The one rule, for every ``key=value``.

A key whose current value is an int, a float or a bool takes only a value of that
type (an int for a float too: ``optimizer.lr=1``), ``null``, or an interpolation
(``${...}``, resolved later). Anything else is refused in one line naming the key,
the value and the type the key expects, before any job is built: a sweep-shaped
``train.train_iters=10,20`` would otherwise reach the job as the string ``"10,20"``.
Keys holding strings, lists, mappings or ``null`` take any value. To change a key's
type on purpose, delete it and add it again: ``~KEY +KEY=VALUE``.

:func:`check_value_type` (key, value, and the value it replaces) is called by :func:`nemo_runspec.config.overrides.apply_overrides`
for each override that sets an existing key (``KEY=v`` and ``++KEY=v``).
"""

from __future__ import annotations

import shlex

from nemo_runspec.errors import ConfigError

#: the key types that are checked, and how messages name them
TYPE_NAMES: dict[type, str] = {bool: "a bool (true or false)", int: "an int", float: "a float"}


def _type_of(value: object) -> type | None:
    """The checked type of ``value`` (bool before int: a bool is an int in Python), or None."""
    for kind in TYPE_NAMES:
        if isinstance(value, kind):
            return kind
    return None


def fits(value: object, kind: type) -> bool:
    """True when ``value`` may replace a value of type ``kind``."""
    if value is None or (isinstance(value, str) and value.startswith("${") and value.endswith("}")):
        return True
    found = _type_of(value)
    return found is kind or (kind is float and found is int)


def _shown(value: object) -> str:
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, bool):
        return f"the bool {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the {type(value).__name__} {value!r}"
    return "a list" if isinstance(value, list) else "a mapping" if isinstance(value, dict) else type(value).__name__


def check_value_type(raw: str, key: str, value: object, current: object, *, where: str = "") -> None:
    """Raise a one-line :class:`ConfigError` when ``value``, the parsed value of the
    override ``raw`` that sets ``key``, does not fit the type of ``current``, the key's
    value now (see the module docstring). ``where`` names the overrides' source in the
    message (``" from run.yaml"``, empty for the command line)."""
    kind = _type_of(current)
    if kind is None or fits(value, kind):
        return
    shown = str(current).lower() if kind is bool else repr(current)
    example = shlex.quote(f"{key}={shown}")
    quoted = f"'{raw}'" if raw.isprintable() else repr(raw)
    raise ConfigError(
        f"invalid value in override {quoted}{where}: {key} expects {TYPE_NAMES[kind]}, got {_shown(value)}",
        key=key,
        hint=f"it is {shown} now, e.g. {example}; to give it another type: ~{key} +{key}=VALUE",
    )
