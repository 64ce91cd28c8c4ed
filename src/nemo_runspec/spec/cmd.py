"""The ``run.cmd`` template of a runspec: its placeholders, checked and filled in.

``run.cmd`` replaces the command that runs the recipe script (by default
``python {script} --config {config} {args}``). A placeholder is ``{name}`` with a
name from :data:`PLACEHOLDERS` (``{word}``: any other ``{word}`` is an error);
``{{`` and ``}}`` are literal braces, and ``${NAME}`` or a brace that does not
enclose a single word (``{a,b}``, ``{ cmd; }``) is left to the shell. Every value filled in is shell-quoted, so a path, a job dir or a
script argument from the command line stays one word of data whatever it
contains; the template itself is the recipe author's, as trusted as the script.

Standard library only: the runspec parser imports it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

#: placeholder -> what it becomes (docs, error hints and ``nemotron runspec show``)
PLACEHOLDERS: Mapping[str, str] = {
    "script": "the recipe script, as the job sees it",
    "config": "the job's train config (train.yaml), as the job sees it",
    "args": "the script arguments given after `--` on the command line, each quoted",
    "job_dir": "the job directory, as the job sees it",
}

# `{{`, `}}`, `${...}` (left to the shell) or `{word}` (a placeholder, checked);
# any other brace (`{a,b}`, `{ cmd; }`) is the shell's
_TOKEN = re.compile(r"\{\{|\}\}|\$\{[^}]*\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def template_problems(template: str) -> list[tuple[str, str]]:
    """``(placeholder, problem)`` for each ``{...}`` of ``template`` that is not a known placeholder."""
    out: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(template):
        name = m.group(1)
        if name is None or name in PLACEHOLDERS:
            continue
        out.append((name, f"unknown placeholder {{{name}}} in run.cmd"))
    return out


def fill(template: str, *, script: str, config: str, args: Sequence[str] = (), job_dir: str = "") -> str:
    """``template`` with every placeholder replaced by its shell-quoted value.

    Raises ``ValueError`` for an unknown placeholder (the parser reports those
    with the script's line before a job is ever built).
    """
    values = {
        "script": shlex.quote(script),
        "config": shlex.quote(config),
        "args": " ".join(shlex.quote(str(a)) for a in args),
        "job_dir": shlex.quote(job_dir),
    }

    def sub(m: re.Match[str]) -> str:
        tok = m.group(0)
        if tok == "{{":
            return "{"
        if tok == "}}":
            return "}"
        name = m.group(1)
        if name is None:  # ${...}: the shell's
            return tok
        if name not in values:
            raise ValueError(f"unknown placeholder {{{name}}} in run.cmd")
        return values[name]

    return _TOKEN.sub(sub, template).strip()
