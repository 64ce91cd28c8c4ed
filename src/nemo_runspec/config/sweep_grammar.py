"""Hydra's sweep grammar for override values, read without Hydra.

``-m/--multirun`` turns an override whose value is a *sweep* into one run per
value (docs/sweeps.md). The forms are Hydra's (its ``OverrideParser``), with
its meaning:

- ``a,b,c`` (a comma outside quotes, brackets, braces and parentheses): each value;
- ``choice(a, b, c)``: the same, written as a function;
- ``range(stop)``, ``range(start, stop[, step])``: Python's range, ints or floats
  (``range(0, 1, 0.25)``); keyword arguments ``start=``, ``stop=``, ``step=`` work;
- ``glob(pattern)``, ``glob(include=[p, q], exclude=r)``: the *names* among a set
  of options that match the shell patterns; here the options are the recipe's
  config names, so it applies to ``-c`` (``-c 'glob(tiny*)'``);
- ``sort(sweep[, reverse=true])``: the values in order.

Quoted text is one value, commas and all (``name='a,b'``); so is ``a\\,b``
(an escaped comma). ``[1,2]``, ``{a: 1}`` and ``${x,y}`` are one value each.
Whitespace around values is dropped. Values keep their text, so the override
of each point is parsed by the usual value rules
(:func:`nemo_runspec.config.overrides.parse_value`).

Why not Hydra's own parser: every released ``hydra-core`` (1.3.x) requires
``omegaconf<2.4``, which our ``omegaconf>=2.4,<2.5`` pin excludes, and the only
release that accepts 2.4 (``1.4.0rc3``) replaces our omegaconf with a release
candidate (2.4.1rc1). So the grammar is read here; ``interval()``, ``shuffle()``
and ``tag()`` (meaningful to Hydra's other sweepers only) are refused by name.
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from nemo_runspec.errors import ConfigError

#: Functions that make a value a sweep.
FUNCTIONS = ("choice", "range", "glob", "sort")
_UNSUPPORTED = {
    "interval": "interval() is for Hydra's continuous sweepers (Optuna, Nevergrad); list the values, "
                "or use range(start, stop, step)",
    "shuffle": "shuffle() would make the points' order differ from run to run, and resuming a sweep "
               "needs the same order; list the values in the order you want",
    "tag": "tag() is for Hydra's Optuna sweeper; list the values",
}
_CLOSERS = {"[": "]", "{": "}", "(": ")"}


@dataclass(frozen=True)
class Sweep:
    """A parsed sweep value: the value texts in order, and whether ``glob`` produced
    them (they must then be matched against a set of names: :meth:`expand`)."""

    values: tuple[str, ...]
    glob: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    #: ``sort(...)`` around a glob: sort its result (ascending, or descending)
    sort: str | None = None

    def expand(self, names: Sequence[str] | None) -> list[str]:
        """The values; for a glob, the ``names`` that match (an error without names)."""
        if self.glob is None:
            return list(self.values)
        if names is None:
            raise ConfigError("glob() chooses among named options, and this key has none",
                              hint="glob() applies to -c/--config (the recipe's config names); "
                                   "list the values instead: key=a,b,c")
        include, exclude = self.glob
        picked = [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in include)
                  and not any(fnmatch.fnmatchcase(n, p) for p in exclude)]
        if self.sort is not None:
            picked.sort(reverse=self.sort == "desc")
        return picked


class _Reader:
    """A tiny recursive-descent reader over one override value."""

    def __init__(self, text: str, where: str) -> None:
        self.text, self.i, self.where = text, 0, where

    def error(self, problem: str, hint: str | None = None) -> ConfigError:
        return ConfigError(f"invalid sweep in {self.where}: {problem}", hint=hint)

    def skip_space(self) -> None:
        while self.i < len(self.text) and self.text[self.i].isspace():
            self.i += 1

    def at(self, chars: str) -> bool:
        return self.i < len(self.text) and self.text[self.i] in chars

    def element(self, stop: str) -> str:
        """One value's text up to a top-level ``,`` or a character of ``stop``."""
        self.skip_space()
        start, depth_stack, out = self.i, [], []
        while self.i < len(self.text):
            ch = self.text[self.i]
            if not depth_stack and (ch == "," or ch in stop):
                break
            if ch == "\\" and self.text[self.i + 1: self.i + 2] == ",":
                out.append(",")
                self.i += 2
                continue
            if ch in "'\"" and (not out or out[-1].isspace() or out[-1] in "[{(,:="):
                end = _closing_quote(self.text, self.i)
                if end is None:
                    raise self.error("unclosed quote", hint="close it, or escape the comma: a\\,b")
                out.append(self.text[self.i: end + 1])
                self.i = end + 1
                continue
            if ch in _CLOSERS:
                depth_stack.append(_CLOSERS[ch])
            elif depth_stack and ch == depth_stack[-1]:
                depth_stack.pop()
            elif ch in ")]}" and not depth_stack and ch not in stop:
                raise self.error(f"'{ch}' without an opening bracket")
            out.append(ch)
            self.i += 1
        if depth_stack:
            raise self.error(f"unclosed '{ {']': '[', '}': '{', ')': '('}[depth_stack[-1]] }'")
        text = "".join(out).strip()
        if not text and self.i == start:
            raise self.error("an empty value", hint="write each value, e.g. key=1,2,3")
        return text


def _closing_quote(text: str, start: int) -> int | None:
    q, i = text[start], start + 1
    while i < len(text):
        if text[i] == "\\" and q == '"':
            i += 2
            continue
        if text[i] == q:
            return i
        i += 1
    return None


def _function_name(text: str) -> str | None:
    """``range`` for ``range(...)`` (the whole text one call), else None."""
    head, paren, _ = text.partition("(")
    head = head.strip()
    if not paren or not text.rstrip().endswith(")") or not head.isidentifier():
        return None
    return head


def _split_top(text: str, where: str) -> list[str]:
    reader = _Reader(text, where)
    parts = [reader.element("")]
    while reader.at(","):
        reader.i += 1
        parts.append(reader.element(""))
    return parts


def is_sweep(text: str) -> bool:
    """True when ``text`` (an override's value) is a sweep in Hydra's grammar."""
    if text is None:
        return False
    name = _function_name(text.strip())
    if name in FUNCTIONS or name in _UNSUPPORTED:
        return True
    try:
        return len(_split_top(text, "value")) > 1
    except ConfigError:
        return False


def parse_sweep(text: str, *, where: str) -> Sweep | None:
    """The :class:`Sweep` of an override value, or None when it is a single value.

    ``where`` names the override in errors (``override 'lr=range(1,'``).
    """
    stripped = text.strip()
    if not stripped:
        return None  # ``key=``: the empty string
    name = _function_name(stripped)
    if name in _UNSUPPORTED:
        raise ConfigError(f"invalid sweep in {where}: {name}() is not supported", hint=_UNSUPPORTED[name])
    if name in FUNCTIONS:
        return _call(name, stripped, where)
    parts = _split_top(text, where)
    if len(parts) == 1:
        return None
    return Sweep(tuple(_literal(p) for p in parts))


def _literal(text: str) -> str:
    """An element as override text: an element that was ``a\\,b`` holds a bare comma
    now, which the value parser would keep as text anyway; quote it so it reads as one
    string whatever its neighbours look like."""
    if "," in text and text[:1] not in "'\"[{" and "${" not in text:
        return json.dumps(text)
    return text


def _args(body: str, where: str) -> tuple[list[str], dict[str, str]]:
    positional: list[str] = []
    named: dict[str, str] = {}
    if not body.strip():
        return positional, named
    for part in _split_top(body, where):
        key, eq, value = part.partition("=")
        if eq and key.strip().isidentifier() and not key.strip().startswith(("'", '"')):
            named[key.strip()] = value.strip()
        elif named:
            raise ConfigError(f"invalid sweep in {where}: a positional argument after a keyword one")
        else:
            positional.append(part)
    return positional, named


def _call(name: str, text: str, where: str) -> Sweep:
    body = text[text.index("(") + 1: -1]
    positional, named = _args(body, where)
    if name == "choice":
        if named:
            raise ConfigError(f"invalid sweep in {where}: choice() takes values, not keywords")
        values = [_literal(p) for p in positional]
        if not values:
            raise ConfigError(f"invalid sweep in {where}: choice() of nothing", hint="choice(a, b)")
        return Sweep(tuple(values))
    if name == "range":
        return Sweep(tuple(_range(positional, named, where)))
    if name == "glob":
        return Sweep((), glob=_glob(positional, named, where))
    return _sort(positional, named, where)


def _number(text: str, what: str, where: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"invalid sweep in {where}: range() {what} must be a number, not {text!r}") from None
    if not math.isfinite(value):
        raise ConfigError(f"invalid sweep in {where}: range() {what} must be finite, not {text!r}")
    return value


def _range(positional: list[str], named: dict[str, str], where: str) -> list[str]:
    unknown = set(named) - {"start", "stop", "step"}
    if unknown:
        raise ConfigError(f"invalid sweep in {where}: range() has no argument {sorted(unknown)[0]!r}",
                          hint="range(start, stop, step)")
    if len(positional) + len(named) not in (1, 2, 3) or len(positional) > 3:
        raise ConfigError(f"invalid sweep in {where}: range() takes 1 to 3 numbers",
                          hint="range(stop), range(start, stop) or range(start, stop, step)")
    names = ["stop"] if len(positional) == 1 and not named else ["start", "stop", "step"]
    given = dict(zip(names, positional, strict=False)) | named
    if "stop" not in given:
        raise ConfigError(f"invalid sweep in {where}: range() needs a stop", hint="range(start, stop, step)")
    start = _number(given.get("start", "0"), "start", where)
    stop = _number(given["stop"], "stop", where)
    step = _number(given.get("step", "1"), "step", where)
    if step == 0:
        raise ConfigError(f"invalid sweep in {where}: range() step must not be 0")
    if all(isinstance(x, int) for x in (start, stop, step)):
        values: list[str] = [str(v) for v in range(int(start), int(stop), int(step))]
    else:  # Hydra's float range: start + k*step while before stop
        count = max(0, math.ceil((stop - start) / step))
        values = [repr(float(start + k * step)) for k in range(count)]
    if not values:
        raise ConfigError(f"invalid sweep in {where}: range() is empty",
                          hint="stop must be past start in the step's direction")
    return values


def _glob(positional: list[str], named: dict[str, str], where: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    unknown = set(named) - {"include", "exclude"}
    if unknown or len(positional) > 2:
        raise ConfigError(f"invalid sweep in {where}: glob(include, exclude) takes two patterns or lists")
    given = dict(zip(["include", "exclude"], positional, strict=False)) | named

    def patterns(text: str | None) -> tuple[str, ...]:
        if text is None:
            return ()
        text = text.strip()
        if text.startswith("[") and text.endswith("]"):
            return tuple(_unquote(p) for p in _split_top(text[1:-1], where) if p)
        return (_unquote(text),)

    include = patterns(given.get("include"))
    if not include:
        raise ConfigError(f"invalid sweep in {where}: glob() needs a pattern", hint="glob(*) or glob(tiny*)")
    return include, patterns(given.get("exclude"))


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _sort(positional: list[str], named: dict[str, str], where: str) -> Sweep:
    reverse = named.pop("reverse", "false").strip().lower()
    if named or reverse not in ("true", "false"):
        raise ConfigError(f"invalid sweep in {where}: sort(values, reverse=true|false)")
    order = "desc" if reverse == "true" else "asc"
    if len(positional) == 1:
        inner = parse_sweep(positional[0], where=where)
        if inner is None:
            return Sweep((_literal(positional[0]),))
        if inner.glob is not None:
            return Sweep((), glob=inner.glob, sort=order)
        values = list(inner.values)
    else:
        values = [_literal(p) for p in positional]
    return Sweep(tuple(sorted(values, key=_sort_key, reverse=order == "desc")))


def _sort_key(text: str) -> tuple[int, float | str]:
    """Numbers by value, before text by its characters (Hydra sorts values of one type)."""
    try:
        return (0, float(text))
    except ValueError:
        return (1, _unquote(text))
