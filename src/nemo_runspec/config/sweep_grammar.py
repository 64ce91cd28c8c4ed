"""Hydra's sweep grammar for override values, read without Hydra.

``-m/--multirun`` turns an override whose value is a *sweep* into one run per
value (docs/sweeps.md). The forms are Hydra's (its ``OverrideParser``, 1.3), with
its meaning:

- ``a,b,c`` (a comma outside quotes, brackets, braces and parentheses): each value;
- ``choice(a, b, c)``: the same, written as a function;
- ``range(stop)``, ``range(start, stop[, step])``: ints or floats; values
  ``start + k*step`` before ``stop`` (``range(0, 1, 0.25)``); keyword arguments
  ``start=``, ``stop=``, ``step=`` work, and a lone start is the stop
  (``range(-5, step=-1)`` is ``0, -1, ..., -4``). Float steps are added in decimal
  (as Hydra's ``FloatRange`` does), with the numbers as typed, so ``range(0, 1, 0.1)``
  is ``0.0, 0.1, 0.2, 0.3, ...``, never ``0.30000000000000004``;
- ``glob(pattern)``, ``glob(include=[p, q], exclude=r)``: the *names* among a set
  of options that match the shell patterns; here the options are the recipe's
  config names, so it applies to ``-c`` (``-c 'glob(tiny*)'``);
- ``sort(values...[, reverse=true])``, ``sort(sweep=...)``: the values in order;
  ``sort([3,1,2])`` / ``sort(list=[...])`` is one value, the sorted list;
- ``int(...)``, ``float(...)``, ``str(...)``, ``bool(...)`` around a sweep (or
  several values): each value cast (``float(range(1, 3))`` is ``1.0, 2.0``;
  ``str(1, 2)`` the strings ``"1"``, ``"2"``). Around one value they are not a
  sweep, and the value is read as any other (its key's type decides).

Quoted text is one value, commas and all (``name='a,b'``); so is ``a\\,b``.
Inside a sweep, ``\\`` escapes Hydra's special characters
(``\\,`` ``\\(`` ``\\)`` ``\\[`` ``\\]`` ``\\{`` ``\\}`` ``\\:`` ``\\=`` ``\\\\``
and a space): ``a\\[1\\],b`` is the texts ``a[1]`` and ``b``. ``[1,2]``, ``{a: 1}``
and ``${x,y}`` are one value each; ``[1,2],[3]`` and ``{a: 1},{a: 2}`` two.
Whitespace around values is dropped. Values keep their text, so the override
of each point is parsed by the usual value rules
(:func:`nemo_runspec.config.overrides.parse_value`).

Refused, each in one line: a sweep inside a sweep (``choice(choice(a,b))``,
``choice(a,b),c``: Hydra refuses nesting too), ``interval()``, ``shuffle()`` and
``tag()`` (meaningful to Hydra's other sweepers only), a misspelt function
(``rnage(1,3)``: did you mean ``range``?), and a range of more than
:data:`MAX_VALUES` values.

Why not Hydra's own parser: every released ``hydra-core`` (1.3.x) requires
``omegaconf<2.4``, which our ``omegaconf>=2.4,<2.5`` pin excludes, and the only
release that accepts 2.4 (``1.4.0rc3``) replaces our omegaconf with a release
candidate (2.4.1rc1). So the grammar is read here.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, InvalidOperation

from nemo_runspec.errors import ConfigError

#: Functions that make a value a sweep.
FUNCTIONS = ("choice", "range", "glob", "sort")
#: Hydra's casts: a sweep when what they cast is one.
CASTS = ("int", "float", "str", "bool")
#: More values than a range may give (a Slurm array holds far fewer; this stops a typo
#: such as ``range(0, 1e9)`` from filling the memory before that check says so).
MAX_VALUES = 100_000
_UNSUPPORTED = {
    "interval": "interval() is for Hydra's continuous sweepers (Optuna, Nevergrad); list the values, "
                "or use range(start, stop, step)",
    "shuffle": "shuffle() would make the points' order differ from run to run, and resuming a sweep "
               "needs the same order; list the values in the order you want",
    "tag": "tag() is for Hydra's Optuna sweeper; list the values",
}
_KNOWN = (*FUNCTIONS, *CASTS, *_UNSUPPORTED)
_CLOSERS = {"[": "]", "{": "}", "(": ")"}
#: what ``\\`` escapes inside a sweep (Hydra's ESC token)
_ESCAPABLE = "\\()[]{}:=, \t"


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


class _Part(str):
    """One element's text; ``escaped`` when a ``\\`` escape made it (it is then plain text)."""

    escaped = False


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

    def element(self) -> _Part:
        """One value's text up to a top-level ``,``."""
        self.skip_space()
        start, depth_stack, out, escaped = self.i, [], [], False
        while self.i < len(self.text):
            ch = self.text[self.i]
            if not depth_stack and ch == ",":
                break
            if ch == "\\" and self.text[self.i + 1: self.i + 2] and self.text[self.i + 1] in _ESCAPABLE:
                out.append(self.text[self.i + 1] if not depth_stack else self.text[self.i: self.i + 2])
                escaped = escaped or not depth_stack
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
            elif ch in ")]}" and not depth_stack:
                raise self.error(f"'{ch}' without an opening bracket", hint=f"escape it: \\{ch}")
            out.append(ch)
            self.i += 1
        if depth_stack:
            raise self.error(f"unclosed '{ {']': '[', '}': '{', ')': '('}[depth_stack[-1]] }'")
        part = _Part("".join(out).strip())
        if not part and self.i == start:
            raise self.error("an empty value", hint="write each value, e.g. key=1,2,3")
        part.escaped = escaped
        return part


def _closing_quote(text: str, start: int) -> int | None:
    q, i = text[start], start + 1
    while i < len(text):
        if text[i] == "\\":  # Hydra: \' in single quotes, \" in double quotes
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
    if not paren or not head.isidentifier() or not text.rstrip().endswith(")"):
        return None
    i, depth = text.index("("), 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "'\"" and text[i - 1] in "(,=[{: \t":
            end = _closing_quote(text, i)
            if end is None:
                return None
            i = end + 1
            continue
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:  # the call ends here: ``f(a),g(b)`` and ``f(a)(b)`` are not one call
            return head if not text[i + 1:].strip() else None
        i += 1
    return None


def _split_top(text: str, where: str) -> list[_Part]:
    reader = _Reader(text, where)
    parts = [reader.element()]
    while reader.at(","):
        reader.i += 1
        parts.append(reader.element())
    return parts


def is_sweep(text: str) -> bool:
    """True when ``text`` (an override's value) is a sweep in Hydra's grammar."""
    if text is None:
        return False
    name = _function_name(text.strip())
    if name in FUNCTIONS or name in _UNSUPPORTED:
        return True
    try:
        if name in CASTS:
            return parse_sweep(text, where="value") is not None
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
    if name in FUNCTIONS or name in CASTS:
        return _call(name, stripped, where)
    if name is not None and (near := _misspelt(name)):
        raise ConfigError(f"invalid sweep in {where}: unknown function {name}()",
                          hint=f"did you mean {near}()? (or quote the text: '\"{stripped}\"')")
    parts = _split_top(text, where)
    if len(parts) == 1:
        return None
    return Sweep(tuple(_element(p, where) for p in parts))


def _misspelt(name: str) -> str | None:
    """The function ``name`` is one edit (or one swap of neighbours) away from, if any."""
    from nemo_runspec._suggest import one_edit_away

    return one_edit_away(name.lower(), _KNOWN) if len(name) >= 3 else None


def _element(part: _Part, where: str) -> str:
    """One value of a list of values: a sweep or cast inside one is refused (Hydra does
    not nest choices either)."""
    name = _function_name(part)
    if name in _KNOWN:
        raise ConfigError(f"invalid sweep in {where}: {name}() inside a list of values",
                          hint="give each key one sweep (key=choice(a,b,c) or key=a,b,c); "
                               "escape the parentheses for text: \\( \\)")
    return _literal(part)


def _literal(text: str) -> str:
    """An element as override text. An escaped element (``a\\,b``, ``a\\[1\\]``) is plain
    text: quote it so the value parser reads it as one string whatever it holds. A quoted
    one is Hydra's quoted string (``'it\\'s'``): the same text, as a JSON string."""
    if text[:1] in "'\"" and _closing_quote(text, 0) == len(text) - 1:
        return json.dumps(_hydra_unquote(text))
    if getattr(text, "escaped", False) or ("," in text and text[:1] not in "[{" and "${" not in text):
        return json.dumps(str(text))
    return str(text)


def _hydra_unquote(text: str) -> str:
    """The text of a Hydra quoted string: ``\\'`` is a quote, and a run of backslashes
    before a quote is halved; every other character (``\\n`` too) is itself."""
    quote, body, out, i = text[0], text[1:-1], [], 0
    while i < len(body):
        if body[i] != "\\":
            out.append(body[i])
            i += 1
            continue
        run = len(body[i:]) - len(body[i:].lstrip("\\"))
        after = body[i + run: i + run + 1]
        if after == quote or i + run == len(body):  # escapes a quote, or the closing one
            out.append("\\" * (run // 2) + (quote if run % 2 else ""))
            i += run + (1 if after == quote and run % 2 else 0)
        else:
            out.append("\\" * run)
            i += run
    return "".join(out)


def _args(body: str, where: str) -> tuple[list[_Part], dict[str, _Part]]:
    positional: list[_Part] = []
    named: dict[str, _Part] = {}
    if not body.strip():
        return positional, named
    for part in _split_top(body, where):
        key, eq, value = part.partition("=")
        if eq and key.strip().isidentifier() and not part.escaped:
            if key.strip() in named:
                raise ConfigError(f"invalid sweep in {where}: argument {key.strip()!r} given twice")
            named[key.strip()] = _Part(value.strip())
        elif named:
            raise ConfigError(f"invalid sweep in {where}: a positional argument after a keyword one",
                              hint="func(a, b=c), not func(b=c, a)")
        else:
            positional.append(part)
    return positional, named


def _call(name: str, text: str, where: str) -> Sweep | None:
    body = text[text.index("(") + 1: -1]
    positional, named = _args(body, where)
    if name == "choice":
        if named:
            raise ConfigError(f"invalid sweep in {where}: choice() takes values, not keywords")
        values = [_element(p, where) for p in positional]
        if not values:
            raise ConfigError(f"invalid sweep in {where}: choice() of nothing", hint="choice(a, b)")
        return Sweep(tuple(values))
    if name == "range":
        return Sweep(tuple(_range(positional, named, where)))
    if name == "glob":
        return Sweep((), glob=_glob(positional, named, where))
    if name in CASTS:
        return _cast(name, positional, named, where)
    return _sort(positional, named, where)


def _number(text: str, what: str, where: str) -> tuple[Decimal, bool]:
    """``(value, is an int)`` of a range argument, as typed (decimal, not binary)."""
    text = text.strip()
    try:
        return Decimal(int(text)), True
    except ValueError:
        pass
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ConfigError(f"invalid sweep in {where}: range() {what} must be a number, not {text!r}") from None
    if not value.is_finite():
        raise ConfigError(f"invalid sweep in {where}: range() {what} must be finite, not {text!r}")
    return value, False


def _range(positional: list[_Part], named: dict[str, _Part], where: str) -> list[str]:
    unknown = set(named) - {"start", "stop", "step"}
    if unknown:
        raise ConfigError(f"invalid sweep in {where}: range() has no argument {sorted(unknown)[0]!r}",
                          hint="range(start, stop, step)")
    if not 1 <= len(positional) + len(named) <= 3 or len(positional) > 3:
        raise ConfigError(f"invalid sweep in {where}: range() takes 1 to 3 numbers",
                          hint="range(stop), range(start, stop) or range(start, stop, step)")
    given: dict[str, str] = dict(zip(("start", "stop", "step"), positional, strict=False))
    for key, value in named.items():
        if key in given:
            raise ConfigError(f"invalid sweep in {where}: range() got {key} twice")
        given[key] = value
    if "stop" not in given:  # Hydra: a lone start is the stop, counting from 0
        if "start" not in given:
            raise ConfigError(f"invalid sweep in {where}: range() needs a stop", hint="range(start, stop, step)")
        given["stop"], given["start"] = given["start"], "0"
    start, int_start = _number(given.get("start", "0"), "start", where)
    stop, int_stop = _number(given["stop"], "stop", where)
    step, int_step = _number(given.get("step", "1"), "step", where)
    if step == 0:
        raise ConfigError(f"invalid sweep in {where}: range() step must not be 0")
    count = max(0, int(((stop - start) / step).to_integral_value(rounding=ROUND_CEILING)))
    if count == 0:
        raise ConfigError(f"invalid sweep in {where}: range() is empty",
                          hint="stop must be past start in the step's direction")
    if count > MAX_VALUES:
        raise ConfigError(f"invalid sweep in {where}: range() gives {count} values, more than a sweep "
                          f"takes ({MAX_VALUES})", hint="a larger step, or a narrower range")
    if int_start and int_stop and int_step:
        return [str(int(start + k * step)) for k in range(count)]
    return [repr(float(start + k * step)) for k in range(count)]


def _glob(positional: list[_Part], named: dict[str, _Part], where: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
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


def _sort(positional: list[_Part], named: dict[str, _Part], where: str) -> Sweep:
    reverse = named.pop("reverse", "false").strip().lower()
    if reverse not in ("true", "false") or set(named) - {"sweep", "list"} or len(named) + bool(positional) > 1:
        raise ConfigError(f"invalid sweep in {where}: sort(values..., reverse=true|false)",
                          hint="sort(3,1,2), sort(range(5), reverse=true), sort(sweep=choice(b,a)), sort(list=[3,1])")
    descending = reverse == "true"
    if "list" in named or (len(positional) == 1 and positional[0].startswith("[") and not positional[0].escaped):
        text = named.get("list") or positional[0]
        if not (text.startswith("[") and text.endswith("]")):
            raise ConfigError(f"invalid sweep in {where}: sort(list=...) takes a list, [a, b]")
        items = [str(p) for p in _split_top(text[1:-1], where)] if text[1:-1].strip() else []
        return Sweep(("[" + ", ".join(sorted(items, key=_sort_key, reverse=descending)) + "]",))
    args = [named["sweep"]] if "sweep" in named else positional
    if len(args) == 1:
        inner = parse_sweep(args[0], where=where)
        if inner is None:
            return Sweep((_literal(args[0]),))
        if inner.glob is not None:
            return Sweep((), glob=inner.glob, sort="desc" if descending else "asc")
        values = list(inner.values)
    else:
        values = [_element(p, where) for p in args]
    if not values:
        raise ConfigError(f"invalid sweep in {where}: sort() of nothing", hint="sort(3, 1, 2)")
    return Sweep(tuple(sorted(values, key=_sort_key, reverse=descending)))


def _sort_key(text: str) -> tuple[int, Decimal | str]:
    """Numbers by value, before text by its characters (Hydra sorts values of one type)."""
    try:
        return (0, Decimal(text.strip()))
    except InvalidOperation:
        return (1, _unquote(text))


def _cast(name: str, positional: list[_Part], named: dict[str, _Part], where: str) -> Sweep | None:
    """``int(...)`` and the other casts: each value of the sweep cast; None around one value."""
    if set(named) - {"value"} or (named and positional):
        raise ConfigError(f"invalid sweep in {where}: {name}() takes values or value=...")
    args = positional or list(named.values())
    if not args:
        raise ConfigError(f"invalid sweep in {where}: {name}() of nothing")
    if len(args) == 1:
        inner = parse_sweep(args[0], where=where)
        if inner is None:
            return None  # a cast of one value is not a sweep: the value is read as any other
        if inner.glob is not None:
            raise ConfigError(f"invalid sweep in {where}: {name}() of glob()", hint="glob() gives config names")
        values = list(inner.values)
    else:
        values = [_element(p, where) for p in args]
    return Sweep(tuple(_cast_one(name, v, where) for v in values))


def _cast_one(name: str, text: str, where: str) -> str:
    """One value text cast as Hydra casts it, written so the value parser reads that type."""
    plain = _unquote(text)
    if plain[:1] in "[{":
        raise ConfigError(f"invalid sweep in {where}: {name}() of a list or mapping is not supported here",
                          hint="cast the values one by one")
    lowered = plain.lower()
    number: Decimal | None = None
    try:
        number = Decimal(plain)
    except InvalidOperation:
        if lowered in ("true", "false"):
            number = Decimal(lowered == "true")
    if name == "str":
        return json.dumps(lowered if lowered in ("true", "false") else plain)
    if name == "bool":
        if lowered in ("true", "false"):
            return lowered
        if number is not None and number.is_finite():
            return "true" if number != 0 else "false"
    elif number is not None and number.is_finite():
        return str(int(number)) if name == "int" else repr(float(number))
    raise ConfigError(f"invalid sweep in {where}: {name}() cannot cast {text!r}")
