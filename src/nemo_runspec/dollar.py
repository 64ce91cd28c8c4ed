"""The one rule for ``$`` in profile, ``run.env``, override and runspec values.

1. **OmegaConf's forms are resolved here, on the submitting machine, when the value
   is read**: ``${oc.env:VAR}`` and ``${oc.env:VAR,default}`` (:data:`RESOLVERS`)
   become the variable's value in this process's environment, the same for every
   backend; ``\\${`` keeps ``${`` as text (OmegaConf's escape). Any other resolver
   (``${oc.decode:...}``, ``${foo:bar}``) is refused (:func:`resolver_problem`).
2. **Everything else is the job's shell's and reaches it as written.**
   ``startup_commands`` (and the runspec's ``run.setup``/``run.cmd``) are shell
   code, run as they are. An ``env_vars`` value is exported as the shell word
   :func:`shell_word` makes of it: ``$NAME``, ``${NAME}``, ``${NAME:-word}`` and
   ``${NAME-word}`` expand when the job starts (``PATH=/opt/bin:$PATH``), ``$$``
   is a literal ``$``, every other character is text; any other ``$`` form
   (``$(cmd)``, ``$1``, ``$?``, a lone ``$``) is refused (:func:`env_value_problem`)
   rather than guessed. A local run expands them the same way
   (:func:`expand`), in the order the variables are set.

Values kept in a job config (``run.env``) are stored OmegaConf-escaped
(:func:`omegaconf_escape`), so OmegaConf never reads a shell ``${HOME}`` as an
interpolation. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: The resolvers a profile, run.env or runspec value may use (resolved on the submitting machine).
RESOLVERS = ("oc.env",)

# ${name:...} with a resolver name (a dotted word then ':'), not escaped by a backslash
_RESOLVER = re.compile(r"(?<!\\)\$\{\s*([A-Za-z_][\w.]*)\s*:(?![-=+?])")  # not ${VAR:-x}, the shell's
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
# The shell forms an env_vars value may use, and $$ (a literal $).
# (the default word holds no quote, backslash, backquote, $ or }: bash parses quotes in it even
# inside double quotes)
_SHELL_FORM = re.compile(rf"\$\$|\${_NAME}|\$\{{{_NAME}\}}|\$\{{{_NAME}:?-[^}}$`\\\"']*\}}")
_FORM_PARTS = re.compile(rf"\$(?:(?P<plain>{_NAME})|\{{(?P<braced>{_NAME})(?:(?P<colon>:)?-(?P<word>[^}}]*))?\}})")

LITERAL_DOLLAR_HINT = "write $$ for a literal $"

#: The same rule as a JSON Schema ``pattern`` (ECMA-262 and Python alike) for a runspec's
#: ``env`` values: every ``$`` starts a shell form above, ``$$`` or ``${oc.env:...}``.
ENV_VALUE_PATTERN = (rf"^(?:[^$\\]|\\(?!\$\{{oc\.env:)|\$\$|\${_NAME}|\$\{{{_NAME}\}}|\$\{{{_NAME}:?-[^}}$`\\\"']*\}}"
                     r"|\$\{oc\.env:[^}]*\})*$")


def resolver_problem(text: str) -> str | None:
    """Why ``text`` uses a resolver this rule does not resolve, or None."""
    for m in _RESOLVER.finditer(text):
        if m.group(1) not in RESOLVERS:
            return (f"${{{m.group(1)}:...}} is not resolved in execution settings (only "
                    f"{', '.join('${' + r + ':VAR}' for r in RESOLVERS)} is, on this machine)")
    return None


def env_value_problem(text: str) -> str | None:
    """Why ``text``, an ``env_vars`` value, uses a ``$`` form the rule refuses, or None."""
    rest = _SHELL_FORM.sub("", text)
    i = rest.find("$")
    if i < 0:
        return None
    shown = (rest[i:i + 12].split() or ["$"])[0]
    return (f"{shown!r} is not expanded: only $NAME, ${{NAME}}, ${{NAME:-default}} expand in env_vars values (on the node, "
            f"when the job starts), and $$ is a literal $")


def shell_word(text: str) -> str:
    """``text`` as one double-quoted shell word for ``export NAME=<word>``: the shell forms
    of :func:`env_value_problem` expand, ``$$`` is a literal ``$``, everything else is data
    (``$(...)``, backquotes, ``;``, newlines). A plain word is returned as it is."""
    if re.fullmatch(r"[A-Za-z0-9_./:,@%+=-]*", text):
        return text
    out: list[str] = []
    pos = 0
    for m in _SHELL_FORM.finditer(text):
        out.append(_escape(text[pos:m.start()]))
        out.append("\\$" if m.group(0) == "$$" else m.group(0))
        pos = m.end()
    out.append(_escape(text[pos:]))
    return '"' + "".join(out) + '"'


def _escape(text: str) -> str:
    for ch in ("\\", '"', "`", "$"):
        text = text.replace(ch, "\\" + ch)
    return text


def expand(text: str, environ: Mapping[str, str]) -> str:
    """What the job's shell makes of :func:`shell_word` of ``text`` in ``environ``
    (a local run has no shell in between): unset names expand to ``""``."""
    def one(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        parts = _FORM_PARTS.fullmatch(m.group(0))
        assert parts is not None
        name = parts.group("plain") or parts.group("braced")
        value = environ.get(name)
        if parts.group("word") is not None or parts.group("colon"):
            unset = value is None or (parts.group("colon") is not None and value == "")
            return parts.group("word") or "" if unset else value  # type: ignore[return-value]
        return value or ""

    return _SHELL_FORM.sub(one, text)


def expand_all(env_vars: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """``env_vars`` expanded one after the other, each seeing ``environ`` and those before it
    (as ``export`` lines do)."""
    seen = dict(environ)
    out: dict[str, str] = {}
    for name, value in env_vars.items():
        out[name] = seen[name] = expand(str(value), seen)
    return out


def omegaconf_escape(obj: Any) -> Any:
    """``obj`` with every string escaped so OmegaConf returns it as written (``${`` ->
    ``\\${``, backslashes before it doubled): for values that are never interpolations."""
    if isinstance(obj, str):
        return re.sub(r"(\\*)\$\{", lambda m: m.group(1) * 2 + "\\${", obj)
    if isinstance(obj, Mapping):
        return {k: omegaconf_escape(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [omegaconf_escape(v) for v in obj]
    return obj
