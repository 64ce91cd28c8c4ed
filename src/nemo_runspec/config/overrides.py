"""Hydra-style dotlist overrides: ``a.b=v``, ``+a.b=v``, ``++a.b=v``, ``~a.b[=v]``.

- ``a.b=v`` sets an existing key; a typo is an error with a did-you-mean hint.
- ``+a.b=v`` adds a new key (error if it exists); ``++a.b=v`` adds or sets.
- ``~a.b`` deletes a key (error if missing); ``~a.b=v`` deletes it only if its
  value is ``v`` (``~a.b=`` with nothing after ``=`` deletes unconditionally).
- Values are YAML: ``5`` is an int, ``1e-4`` a float, ``[1,2]`` a list, ``true``
  a bool, ``null`` is None, ``'5'`` a string. Unquoted text that is not a number,
  bool, null, list or ``{...}`` mapping is kept verbatim (``x=y``, ``a: b``,
  ``foo #bar`` stay strings). ``a=`` sets the empty string.
- Keys under ``run.env.`` may name any env.toml profile key without ``+``
  (``run.env.partition=batch`` works even if the YAML has no ``run.env``);
  unknown ones get a did-you-mean over the profile keys. Nested keys below a
  profile key (``run.env.env_vars.HF_HOME=/x``) are created as needed.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import yaml
from omegaconf import DictConfig, OmegaConf

from nemo_runspec._suggest import closest
from nemo_runspec.config.yaml_io import yaml_loader
from nemo_runspec.errors import ConfigError

Op = Literal["set", "add", "force", "delete"]

_SEGMENT = re.compile(r"^[\w][\w\-]*$")
_FORMS = "expected KEY=VALUE, +KEY=VALUE, ++KEY=VALUE or ~KEY"
_ENV_PREFIX = ("run", "env")
_NULLS = {"null", "Null", "NULL", "~"}


@dataclass(frozen=True)
class Override:
    """One parsed override. ``value`` is the parsed YAML value, ``text`` the raw one."""

    raw: str
    op: Op
    key: str
    path: tuple[str, ...]
    text: str | None
    value: Any = None

    @property
    def has_value(self) -> bool:
        """False only for a bare ``~key``."""
        return self.text is not None


_SEXAGESIMAL = re.compile(r"[-+]?\d+(?::[0-5]?\d)+(?:\.\d*)?")


def parse_value(text: str) -> Any:
    """Parse an override value as YAML, keeping unquoted plain text verbatim."""
    if text == "":
        return ""
    if _SEXAGESIMAL.fullmatch(text.strip()):
        # YAML 1.1 reads 10:00:00 as 36000 (base 60): a Slurm time limit of 25 days.
        return text
    try:
        value = yaml.load(text, Loader=_loader())
    except yaml.YAMLError:
        return text
    stripped = text.strip()
    if value is None:
        return None if stripped in _NULLS else text
    if isinstance(value, str):
        # A quoted string is unquoted; a plain one is kept exactly as typed.
        return value if stripped[:1] in ("'", '"') else text
    if isinstance(value, dict) and not stripped.startswith("{"):
        return text
    if not _plain(value):
        return text
    return value


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, (str, int, float, bool)):
        return True
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, (str, int)) and _plain(v) for k, v in value.items())
    return False


_LOADER: Any = None


def _loader() -> Any:
    global _LOADER
    if _LOADER is None:
        _LOADER = yaml_loader()
    return _LOADER


def parse_override(raw: str, *, source: str = "command line") -> Override:
    """Parse one override string; malformed ones raise :class:`ConfigError`."""
    where = _where(source)
    body = raw.lstrip()
    if not body.strip():
        raise ConfigError(f"empty override{where}", hint=_FORMS)
    op: Op
    if body.startswith("++"):
        op, body = "force", body[2:]
    elif body.startswith("+"):
        op, body = "add", body[1:]
    elif body.startswith("~"):
        op, body = "delete", body[1:]
    else:
        op = "set"
    key, sep, text = body.partition("=")
    key = key.strip()
    if not key:
        raise ConfigError(f"malformed override '{raw}'{where}: missing key before '='", hint=_FORMS)
    path = tuple(key.split("."))
    if not all(_SEGMENT.match(seg) for seg in path):
        raise ConfigError(
            f"malformed override '{raw}'{where}: invalid key '{key}'",
            hint="keys are dot-separated names like 'train.lr'",
        )
    if not sep:
        if op != "delete":
            raise ConfigError(f"malformed override '{raw}'{where}: missing '=VALUE'", hint=_FORMS)
        return Override(raw=raw, op=op, key=key, path=path, text=None)
    if op == "delete" and text == "":
        return Override(raw=raw, op=op, key=key, path=path, text=None)
    return Override(raw=raw, op=op, key=key, path=path, text=text, value=parse_value(text))


def _where(source: str) -> str:
    return "" if source == "command line" else f" from {source}"


def _profile_keys() -> frozenset[str] | None:
    """Known env.toml profile keys, or None while nemo_runspec.env is unavailable."""
    try:
        from nemo_runspec.env import PROFILE_KEYS
    except ImportError:
        return None
    return frozenset(PROFILE_KEYS)


def _env_key(path: tuple[str, ...]) -> str | None:
    """The profile key ``K`` of a ``run.env.K...`` path, else None."""
    if len(path) > 2 and path[:2] == _ENV_PREFIX:
        return path[2]
    return None


def _lookup(node: Any, seg: str) -> tuple[bool, Any]:
    if isinstance(node, dict):
        if seg in node:
            return True, seg
        if seg.lstrip("-").isdigit() and int(seg) in node:
            return True, int(seg)
        return False, seg
    if isinstance(node, list):
        if seg.isdigit() and int(seg) < len(node):
            return True, int(seg)
        return False, seg
    return False, seg


def _unknown(ov: Override, depth: int, node: Any, where: str, extra: Iterable[str] = ()) -> ConfigError:
    """Error for ``ov.path[:depth+1]`` missing under ``node``."""
    prefix = ".".join(ov.path[:depth])
    prefix = f"{prefix}." if prefix else ""
    missing = prefix + ov.path[depth]
    names = sorted({*(str(k) for k in node), *extra}) if isinstance(node, dict) else sorted(extra)
    best = closest(ov.path[depth], names)
    if best is not None:
        hint = f"did you mean '{prefix}{best}'?"
    elif ov.op == "delete":
        hint = ("valid: " + ", ".join(prefix + n for n in names)) if 0 < len(names) <= 12 else None
    else:
        hint = f"use '+{ov.key}={ov.text}' to add a new key"
    return ConfigError(f"unknown key '{missing}' in override '{ov.raw}'{where}", key=missing, hint=hint)


def _not_container(ov: Override, depth: int, value: Any, where: str) -> ConfigError:
    prefix = ".".join(ov.path[: depth + 1])
    return ConfigError(
        f"cannot apply override '{ov.raw}'{where}: '{prefix}' is a {type(value).__name__} value, not a mapping",
        key=prefix,
    )


def _apply_one(data: dict[str, Any], ov: Override, where: str, profile_keys: Callable[[], frozenset[str] | None]) -> None:
    env_key = _env_key(ov.path)
    env_ok = False
    if env_key is not None and ov.op in ("set", "delete"):
        keys = profile_keys()
        env_ok = keys is None or env_key in keys
        if not env_ok:
            run = data.get("run")
            env = run.get("env") if isinstance(run, dict) else None
            if not (isinstance(env, dict) and env_key in env):
                raise _unknown(ov, 2, env if isinstance(env, dict) else {}, where, keys or ())
    create = ov.op in ("add", "force")
    node: Any = data
    for depth, seg in enumerate(ov.path[:-1]):
        found, k = _lookup(node, seg)
        if not found:
            may_create = create or env_ok
            if ov.op == "delete" and env_ok:
                return  # nothing to delete here; the profile layer may still hold it
            if not may_create or not isinstance(node, dict):
                extra = _env_extra(ov, depth, profile_keys)
                raise _unknown(ov, depth, node, where, extra)
            node[k] = {}
        child = node[k]
        if child is None and (create or env_ok) and isinstance(node, dict):
            node[k] = child = {}
        if not isinstance(child, (dict, list)):
            raise _not_container(ov, depth, child, where)
        node = child
    last = ov.path[-1]
    found, k = _lookup(node, last)
    depth = len(ov.path) - 1
    if ov.op == "delete":
        if not found:
            if env_ok:
                return
            raise _unknown(ov, depth, node, where, _env_extra(ov, depth, profile_keys))
        if ov.has_value and node[k] != ov.value:
            raise ConfigError(
                f"cannot delete '{ov.key}' in override '{ov.raw}'{where}: "
                f"its value is {node[k]!r}, not {ov.value!r}",
                key=ov.key,
            )
        del node[k]
        return
    if ov.op == "add" and found:
        raise ConfigError(
            f"key '{ov.key}' already exists in override '{ov.raw}'{where}",
            key=ov.key,
            hint=f"use '{ov.key}={ov.text}' to change it",
        )
    if not found:
        if ov.op == "set" and not env_ok:
            raise _unknown(ov, depth, node, where, _env_extra(ov, depth, profile_keys))
        if isinstance(node, list):
            raise ConfigError(
                f"list index '{ov.key}' out of range in override '{ov.raw}'{where}",
                key=ov.key,
                hint="set the whole list instead, e.g. key=[a,b]",
            )
    node[k] = copy.deepcopy(ov.value)


def _env_extra(ov: Override, depth: int, profile_keys: Callable[[], frozenset[str] | None]) -> list[str]:
    """Profile keys as extra did-you-mean candidates when the miss is directly under run.env."""
    if depth != 2 or ov.path[:2] != _ENV_PREFIX:
        return []
    return sorted(profile_keys() or ())


def apply_overrides(
    cfg: DictConfig, overrides: Iterable[str], *, source: str = "command line"
) -> DictConfig:
    """Return a copy of ``cfg`` with ``overrides`` applied in order.

    ``source`` names where the overrides came from in error messages (omitted
    for the command line). Interpolations are left unresolved. Raises
    :class:`ConfigError` for malformed overrides, unknown keys (with a
    did-you-mean hint), adding an existing key or deleting a missing one.
    """
    overrides = list(overrides)
    if not overrides:
        return copy.deepcopy(cfg)
    where = _where(source)
    parsed = [parse_override(o, source=source) for o in overrides]
    data = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(data, dict)
    cache: dict[str, frozenset[str] | None] = {}

    def profile_keys() -> frozenset[str] | None:
        if "keys" not in cache:
            cache["keys"] = _profile_keys()
        return cache["keys"]

    for ov in parsed:
        _apply_one(data, ov, where, profile_keys)
    try:
        return OmegaConf.create(data)
    except Exception as exc:  # e.g. an unsupported value type
        raise ConfigError(f"invalid value in overrides{where}: {exc}".split("\n")[0]) from exc
