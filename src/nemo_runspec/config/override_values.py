"""The value of an override (``k=VALUE``): YAML, with plain text kept as typed.

``5`` is an int, ``1e-4`` a float, ``[1,2]`` a list, ``true`` a bool, ``null``
None, ``'5'`` a string. Unquoted text that is not a number, bool, null,
``[...]`` list or ``{...}`` mapping is kept verbatim (``x=y``, ``a: b``,
``foo #bar``, ``- a``, ``[draft] notes`` stay strings); ``a=`` is the empty string.
A value that is clearly a mistake is an error, never a silent string: an
unclosed or stray bracket/brace (``[1,2``, ``{a: 1``, ``[1]]``), an unclosed
quote or text after a closing one (``'abc``, ``"a"b``), an explicit YAML tag
that does not fit (``!!int abc``) and a malformed interpolation (``${x``).
:mod:`nemo_runspec.config.overrides` applies the values to a config.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from nemo_runspec.config.yaml_io import yaml_loader
from nemo_runspec.errors import ConfigError

_NULLS = {"null", "Null", "NULL", "~"}

#: ``KEY==VALUE`` (a doubled ``=``) leaves a value starting with ``=``: a mistake for any key
_LEADING_EQUALS = "the value starts with '=', one '=' too many"
_SEXAGESIMAL = re.compile(r"[-+]?\d+(?::[0-5]?\d)+(?:\.\d*)?")
_CLOSE = {"[": "]", "{": "}"}
_OPEN = {v: k for k, v in _CLOSE.items()}


def parse_value(text: str) -> Any:
    """Parse an override value as YAML, keeping unquoted plain text verbatim.

    Raises :class:`ConfigError` when the value is clearly a mistake (see the
    module docstring): an unbalanced bracket, brace or quote, a YAML tag that
    does not fit, or a malformed ``${...}`` interpolation.
    """
    value, problem = parse_text(text)
    if problem is not None:
        raise ConfigError(f"invalid value {show(text)}: {problem}", hint=quote_hint(None, text, problem))
    return value


def parse_text(text: str) -> tuple[Any, str | None]:
    """``(value, None)``, or ``(text, why the value is a mistake)``."""
    if text == "":
        return "", None
    if text.startswith("="):
        return text, _LEADING_EQUALS
    if _SEXAGESIMAL.fullmatch(text.strip()):
        # YAML 1.1 reads 10:00:00 as 36000 (base 60): a Slurm time limit of 25 days.
        return text, None
    stripped = text.strip()
    try:
        value = _load_flow(text, stripped)
    except yaml.YAMLError:
        # Text YAML cannot read is kept as text, unless it is a mistake: unbalanced, or
        # holding a ${...} OmegaConf cannot parse (it would fail only when resolved).
        return text, _malformed(stripped) or _bad_interpolation(text)
    except Exception as exc:  # noqa: BLE001 - a tag's constructor failed (``!!int abc``)
        return text, f"{type(exc).__name__}: {exc}".splitlines()[0]
    if value is None:
        value = None if stripped in _NULLS else text
    elif isinstance(value, str):
        # A quoted string is unquoted; a plain one is kept exactly as typed.
        value = value if stripped[:1] in ("'", '"') else text
    elif isinstance(value, dict) and not stripped.startswith("{"):
        value = text
    elif isinstance(value, list) and not stripped.startswith("["):
        value = text  # ``- a`` (a YAML block list) is text; lists are written [a, b]
    elif not _plain(value):
        value = text
    return value, _bad_interpolation(value)


def _load_flow(text: str, stripped: str) -> Any:
    """``text`` as YAML; a list or mapping holding ``${...}`` is read with the
    interpolations set aside (:func:`_protect_interpolations`) when YAML alone fails.
    A mapping's keys end at their first colon, as Hydra reads them (:func:`_hydra_keys`)."""
    if "{" in stripped and stripped[:1] in _CLOSE:
        text = _hydra_keys(text)
    try:
        return yaml.load(text, Loader=_loader())
    except yaml.YAMLError:
        protected, saved = _protect_interpolations(text) if stripped[:1] in _CLOSE else (text, {})
        if not saved:
            raise
        return _restore_interpolations(yaml.load(protected, Loader=_loader()), saved)


def _hydra_keys(text: str) -> str:
    """``text`` with a space after each colon that ends a flow mapping's key.

    YAML reads ``{a:10}`` as the key ``"a:10"`` with no value (a plain scalar may hold
    ``:`` when no space follows); Hydra's grammar, whose overrides these are, reads the
    mapping ``{a: 10}`` (a key holds no colon). Quoted text and ``${...}`` are left alone.
    """
    out: list[str] = []
    stack: list[list[Any]] = []  # [kind, in key] per open bracket/brace
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "'\"" and (not out or out[-1] in "[{,: \t"):
            end = _closing_quote(text, i)
            if end is None:
                break  # unbalanced: the error path says so
            out.append(text[i: end + 1])
            i = end + 1
            continue
        if ch == "$" and text[i + 1: i + 2] == "{":
            j = _interpolation_end(text, i)
            out.append(text[i: len(text) if j is None else j + 1])
            i = len(text) if j is None else j + 1
            continue
        out.append(ch)
        if ch in "[{":
            stack.append([ch, ch == "{"])
        elif ch in "]}" and stack:
            stack.pop()
        elif ch == "," and stack and stack[-1][0] == "{":
            stack[-1][1] = True
        elif ch == ":" and stack and stack[-1][0] == "{" and stack[-1][1]:
            stack[-1][1] = False
            if text[i + 1: i + 2] not in ("", " ", "\t"):
                out.append(" ")
        i += 1
    return "".join(out) + text[i:]


def _protect_interpolations(text: str) -> tuple[str, dict[str, str]]:
    """``text`` with each balanced ``${...}`` replaced by a plain token, and the tokens.

    In a YAML flow collection ``${x}`` is a syntax error (``{`` opens a mapping), so
    ``[${x}, 2]`` would fail to parse; Hydra reads it as a list holding an
    interpolation. The tokens are put back by :func:`_restore_interpolations`.
    """
    stem = "nemotroninterp"
    while stem in text:
        stem += "x"
    out, saved, i = [], {}, 0
    while (start := text.find("${", i)) >= 0:
        j = _interpolation_end(text, start)
        if j is None:  # unbalanced: left for the error path
            break
        token = f"{stem}{len(saved)}z"
        saved[token] = text[start: j + 1]
        out.append(text[i:start] + token)
        i = j + 1
    out.append(text[i:])
    return "".join(out), saved


def _interpolation_end(text: str, start: int) -> int | None:
    """The index of the ``}`` that closes the ``${`` at ``start`` (braces nest), or None."""
    depth = 0
    for j in range(start + 1, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return j
    return None


def _restore_interpolations(value: object, saved: dict[str, str]) -> Any:
    if not saved:
        return value
    if isinstance(value, str):
        for token, original in saved.items():
            value = value.replace(token, original)
        return value
    if isinstance(value, list):
        return [_restore_interpolations(v, saved) for v in value]
    if isinstance(value, dict):
        return {_restore_interpolations(k, saved): _restore_interpolations(v, saved) for k, v in value.items()}
    return value


def _malformed(text: str) -> str | None:
    """Why text that is not valid YAML is a mistake rather than a plain string, or None.

    Unbalanced brackets, braces or quotes are mistakes (``[1,2``, ``'abc``); so is
    a value that starts as a quoted string but goes on after it (``"a"b``).
    Balanced text (``[draft] notes``, ``a: b: c``, ``@x``) is a plain string.
    """
    problem = _unbalanced(text)
    if problem is None and text[:1] in ("'", '"'):
        problem = "text after the closing quote"
    return problem


def _unbalanced(text: str) -> str | None:
    """The first unbalanced bracket, brace or quote of a flow-YAML value, or None."""
    stack: list[str] = []
    prev = ""  # the last non-blank character outside quotes
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "'\"" and prev in ("", "[", "{", ",", ":"):
            end = _closing_quote(text, i)
            if end is None:
                return "unclosed " + ("single" if ch == "'" else "double") + " quote"
            i, prev = end + 1, ch
            continue
        if ch in _CLOSE:
            stack.append(ch)
        elif ch in _OPEN:
            if not stack:
                return f"'{ch}' without an opening '{_OPEN[ch]}'"
            if _CLOSE[stack[-1]] != ch:
                return f"'{ch}' closes '{stack[-1]}'"
            stack.pop()
        if not ch.isspace():
            prev = ch
        i += 1
    if stack:
        return f"unclosed '{stack[-1]}'"
    return None


def _closing_quote(text: str, start: int) -> int | None:
    """Index of the quote closing the YAML quoted scalar opened at ``start``, or None."""
    q = text[start]
    i = start + 1
    while i < len(text):
        ch = text[i]
        if q == '"' and ch == "\\":
            i += 2
            continue
        if ch == q:
            if q == "'" and text[i + 1 : i + 2] == "'":  # '' is an escaped ' in single quotes
                i += 2
                continue
            return i
        i += 1
    return None


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


def _bad_interpolation(value: object) -> str | None:
    """Why a ``${...}`` in the value cannot be parsed (OmegaConf would refuse it), or None."""
    texts = [s for s in _strings(value) if "${" in s]
    if not texts:
        return None
    from omegaconf import grammar_parser

    for s in texts:
        try:
            grammar_parser.parse(s)
        except Exception:  # noqa: BLE001 - GrammarParseError and antlr's own errors
            return f"malformed interpolation {show(s)}"
    return None


def show(text: str) -> str:
    """``'text'`` for messages; escaped when it holds line breaks or other unprintables."""
    return f"'{text}'" if text.isprintable() else repr(text)


_INTERPOLATION_HINT = "interpolations look like ${key} or ${art:name,field}; write \\${ for a literal ${"


def quote_hint(key: str | None, text: str, problem: str) -> str:
    """How to fix the value: for text, YAML-quote it (and shell-quote the override)."""
    import json
    import shlex

    if problem.startswith("malformed interpolation"):
        return _INTERPOLATION_HINT
    if problem == _LEADING_EQUALS and key is not None:
        return f"write {shlex.quote(f'{key}={text[1:]}')}; text that starts with '=' is quoted: " \
               f"{shlex.quote(f'{key}={json.dumps(text)}')}"
    quoted = json.dumps(text, ensure_ascii=not text.isprintable())  # a YAML double-quoted string
    if key is None:
        return f"to pass it as text, quote it: {quoted}"
    return f"to pass it as text, quote it: {shlex.quote(f'{key}={quoted}')}"


def _plain(value: object) -> bool:
    if value is None or isinstance(value, (str, int, float, bool)):
        return True
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, (str, int)) and _plain(v) for k, v in value.items())
    return False


_LOADER: type | None = None


def _loader() -> type:
    global _LOADER
    if _LOADER is None:
        _LOADER = yaml_loader()
    return _LOADER

