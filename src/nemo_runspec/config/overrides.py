"""Hydra-style dotlist overrides: ``a.b=v``, ``+a.b=v``, ``++a.b=v``, ``~a.b[=v]``.

- ``a.b=v`` sets an existing key; a typo is an error with a did-you-mean hint.
- ``+a.b=v`` adds a new key (error if it exists); ``++a.b=v`` adds or sets.
- ``~a.b`` deletes a key (error if missing); ``~a.b=v`` deletes it only if its
  value is ``v`` (``~a.b=`` with nothing after ``=`` deletes unconditionally).
- Values are YAML (:mod:`nemo_runspec.config.override_values`): ``5`` is an int,
  ``1e-4`` a float, ``[1,2]`` a list, ``true`` a bool, ``null`` is None, ``'5'`` a string. Unquoted text that is not a number,
  bool, null, ``[...]`` list or ``{...}`` mapping is kept verbatim (``x=y``,
  ``a: b``, ``foo #bar``, ``- a``, ``[draft] notes`` stay strings). ``a=`` sets
  the empty string.
- A value that is clearly a mistake is an error, never a silent string: an
  unclosed or stray bracket/brace (``[1,2``, ``{a: 1``, ``[1]]``), an unclosed
  quote or text after a closing one (``'abc``, ``"a"b``), an explicit YAML tag
  that does not fit (``!!int abc``) and a malformed interpolation (``${x``).
  The error names the override and says how to pass the text as a string.
- Keys under ``run.env.`` may name any env.toml profile key without ``+``
  (``run.env.partition=batch`` works even if the YAML has no ``run.env``);
  unknown ones get a did-you-mean over the profile keys. Nested keys below a
  profile key (``run.env.env_vars.HF_HOME=/x``) are created as needed.
  ``run.env.container`` is ``run.env.container_image`` (the reference's synonym).
- ``run.profile.K=v`` is ``run.env.profiling.K=v`` (``run.profile.nsys=true``:
  docs/reports.md, "Profiling"); ``run.profile`` itself stays the profile's name.
- ``run.KEY=v`` for a profile key ``KEY`` is ``run.env.KEY=v`` (the reference's
  ``run.nodes=8``), unless the config's own ``run:`` has a ``KEY`` (``run.data``,
  ``run.model`` stay what they are). Only plain sets and deletes are read so;
  ``+run.KEY=v`` adds a key of that name under ``run``.
- ``run.wandb.KEY=v`` for a key of env.toml's ``[wandb]`` (``project``, ``entity``,
  ...) may be set without ``+``: ``run.wandb`` is filled from ``[wandb]`` (see
  :func:`nemo_runspec.config.job_config.build_job_config`).
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from omegaconf import DictConfig, OmegaConf

from nemo_runspec._suggest import closest
from nemo_runspec.config.override_types import check_value_type
from nemo_runspec.config.override_values import parse_text, parse_value, quote_hint, show
from nemo_runspec.errors import ConfigError
from nemo_runspec.secrets import is_secret_env

__all__ = ["Op", "Override", "apply_overrides", "apply_to_data", "canonical", "parse_override", "parse_value"]

Op = Literal["set", "add", "force", "delete"]

_SEGMENT = re.compile(r"^[\w][\w\-]*$")
_FORMS = "expected KEY=VALUE, +KEY=VALUE, ++KEY=VALUE or ~KEY"
_ENV_PREFIX = ("run", "env")
_WANDB_PREFIX = ("run", "wandb")


@dataclass(frozen=True)
class Override:
    """One parsed override. ``value`` is the parsed YAML value, ``text`` the raw one."""

    raw: str
    op: Op
    key: str
    path: tuple[str, ...]
    text: str | None
    value: object = None
    problem: str | None = None
    """Why ``text`` is not a valid value (raised by :func:`apply_overrides`), or None."""

    @property
    def has_value(self) -> bool:
        """False only for a bare ``~key``."""
        return self.text is not None



def parse_override(raw: str, *, source: str = "command line") -> Override:
    """Parse one override string; a malformed key or form raises :class:`ConfigError`.

    A value that is a mistake (``k=[1,2``) does not raise here: it is kept as
    text with the reason in :attr:`Override.problem`, and
    :func:`apply_overrides` refuses it.
    """
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
    value, problem = parse_text(text)
    return Override(raw=raw, op=op, key=key, path=path, text=text, value=value, problem=problem)


def _where(source: str) -> str:
    return "" if source == "command line" else f" from {source}"


def _profile_keys() -> frozenset[str] | None:
    """Known env.toml profile keys, or None while nemo_runspec.env is unavailable."""
    try:
        from nemo_runspec.env import PROFILE_KEYS
        from nemo_runspec.env.reference import SYNONYMS
    except ImportError:
        return None
    return frozenset(PROFILE_KEYS) | frozenset(SYNONYMS)


def _wandb_keys() -> frozenset[str]:
    """The keys of env.toml's ``[wandb]`` section (creatable under ``run.wandb``)."""
    from nemo_runspec.env.model import WandbSection

    return frozenset(WandbSection.model_fields)


def canonical(ov: Override, run: object) -> Override:
    """``ov`` with the reference's spellings read as ours (see the module docstring):
    ``run.KEY`` -> ``run.env.KEY`` for a profile key the config's ``run`` (``run``,
    a mapping or None) does not have itself, and ``run.env.container`` ->
    ``run.env.container_image``."""
    from nemo_runspec.env.reference import SYNONYMS, shorthand_keys

    path = ov.path
    if len(path) >= 3 and path[:2] == ("run", "profile") and ov.op in ("set", "delete"):
        path = ("run", "env", "profiling", *path[2:])  # run.profile.nsys=true (docs/reports.md, Profiling)
    if (len(path) >= 2 and path[0] == "run" and path[1] != "env" and ov.op in ("set", "delete")
            and not (isinstance(run, dict) and path[1] in run) and path[1] in shorthand_keys()):
        path = ("run", "env", *path[1:])
    if len(path) >= 3 and path[:2] == _ENV_PREFIX and path[2] in SYNONYMS:
        path = (*path[:2], SYNONYMS[path[2]], *path[3:])
    if path == ov.path:
        return ov
    return dataclasses.replace(ov, path=path, key=".".join(path))


def _env_key(path: tuple[str, ...]) -> str | None:
    """The profile key ``K`` of a ``run.env.K...`` path, else None."""
    if len(path) > 2 and path[:2] == _ENV_PREFIX:
        return path[2]
    return None


def _lookup(node: object, seg: str) -> tuple[bool, Any]:
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


def _unknown(ov: Override, depth: int, node: object, where: str, extra: Iterable[str] = ()) -> ConfigError:
    """Error for ``ov.path[:depth+1]`` missing under ``node``."""
    extra = list(extra)
    if isinstance(node, list) and not extra:  # (under run.env, a list is the mistake: the keys are named)
        return _not_an_index(ov, depth, node, where)
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


def _not_an_index(ov: Override, depth: int, items: list[Any], where: str) -> ConfigError:
    """Error for ``ov.path[depth]`` under a list: not an index, or past its end (lists do not grow)."""
    listed = ".".join(ov.path[:depth]) or "the config"
    seg = ov.path[depth]
    if seg.isdigit():
        what = f"index {seg} is past the end of '{listed}' ({len(items)} item(s): 0..{len(items) - 1})" \
            if items else f"'{listed}' is an empty list"
    else:
        what = f"'{listed}' is a list and '{seg}' is not an index"
    return ConfigError(f"{what} in override '{ov.raw}'{where}", key=".".join(ov.path[: depth + 1]),
                       hint=f"set the whole list instead, e.g. {listed}=[a,b]")


def _not_container(ov: Override, depth: int, value: object, where: str) -> ConfigError:
    prefix = ".".join(ov.path[: depth + 1])
    return ConfigError(
        f"cannot apply override '{ov.raw}'{where}: '{prefix}' is a {type(value).__name__} value, not a mapping",
        key=prefix,
    )


def _apply_one(data: dict[str, Any], ov: Override, where: str, profile_keys: Callable[[], frozenset[str] | None]) -> None:
    ov = canonical(ov, data.get("run"))
    env_key = _env_key(ov.path)
    env_ok = False
    if (len(ov.path) == 3 and ov.path[:2] == _WANDB_PREFIX and ov.op in ("set", "delete")
            and ov.path[2] in _wandb_keys()):
        env_ok = True  # run.wandb.project=x: run.wandb is filled from [wandb]
    elif env_key is not None and ov.op in ("set", "delete"):
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
            raise _not_an_index(ov, depth, node, where)
    else:
        check_value_type(ov.raw, ov.key, ov.value, node[k], where=where)
    node[k] = copy.deepcopy(ov.value)


def _env_vars_list_as_table(data: dict[str, Any], ov: Override) -> None:
    """Before ``run.env.env_vars.NAME=v``: a ``run.env.env_vars`` written as the
    reference's list of ``NAME=value`` strings becomes the table it means."""
    ov = canonical(ov, data.get("run"))
    if ov.path[:3] != (*_ENV_PREFIX, "env_vars") or len(ov.path) < 4:
        return
    env = (data.get("run") or {}).get("env")
    if isinstance(env, dict) and isinstance(env.get("env_vars"), list):
        from nemo_runspec.env.reference import env_vars_table

        env["env_vars"] = env_vars_table(env["env_vars"], table="run.env",
                                         where=lambda _k: ("recipe config", None))


def _env_extra(ov: Override, depth: int, profile_keys: Callable[[], frozenset[str] | None]) -> list[str]:
    """Profile keys as extra did-you-mean candidates when the miss is directly under
    run.env, or directly under run (the ``run.nodes`` shorthand)."""
    if depth == 1 and ov.path[0] == "run":
        from nemo_runspec.env.reference import shorthand_keys

        return sorted(shorthand_keys())
    if depth != 2 or ov.path[:2] != _ENV_PREFIX:
        return []
    return sorted(profile_keys() or ())


def apply_overrides(
    cfg: DictConfig, overrides: Iterable[str], *, source: str = "command line"
) -> DictConfig:
    """Return a copy of ``cfg`` with ``overrides`` applied in order.

    ``source`` names where the overrides came from in error messages (omitted
    for the command line). Interpolations are left unresolved. Raises
    :class:`ConfigError` for malformed overrides, values that are clearly
    mistakes (``[1,2``: see the module docstring), unknown keys (with a
    did-you-mean hint), adding an existing key or deleting a missing one.
    """
    overrides = list(overrides)
    if not overrides:
        return copy.deepcopy(cfg)
    data = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(data, dict)
    apply_to_data(data, overrides, source=source)
    try:
        return OmegaConf.create(data)
    except Exception as exc:  # e.g. an unsupported value type
        raise ConfigError(f"invalid value in overrides{_where(source)}: {exc}".split("\n")[0]) from exc


def apply_to_data(data: dict[str, Any], overrides: Iterable[str], *, source: str = "command line") -> dict[str, Any]:
    """:func:`apply_overrides` on a plain mapping (``OmegaConf.to_container`` of a
    config), changed in place and returned; the same rules and errors, without
    OmegaConf's cost (a sweep derives hundreds of points' configs this way)."""
    where = _where(source)
    parsed = [parse_override(o, source=source) for o in overrides]
    for ov in parsed:
        if ov.problem is not None and ov.text is not None:
            hidden = is_secret_env(str(ov.key or "").rsplit(".", 1)[-1], value=ov.text)  # never echo a secret
            shown = f"the override of {ov.key} (value not shown)" if hidden else f"override {show(ov.raw)}"
            raise ConfigError(f"invalid value in {shown}{where}: {ov.problem}", key=ov.key,
                              hint=quote_hint(ov.raw.split("=", 1)[0].strip(),
                                              "..." if hidden else ov.text, ov.problem))
    cache: dict[str, frozenset[str] | None] = {}

    def profile_keys() -> frozenset[str] | None:
        if "keys" not in cache:
            cache["keys"] = _profile_keys()
        return cache["keys"]

    for ov in parsed:
        _env_vars_list_as_table(data, ov)
        _apply_one(data, ov, where, profile_keys)
    return data
