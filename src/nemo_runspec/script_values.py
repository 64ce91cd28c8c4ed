"""What a profile or runspec value may contain when it ends up in a batch script.

nemo-run pastes most executor settings into the sbatch script as they are:
``#SBATCH --partition=VALUE`` header lines (parsed by sbatch: a space or a
newline starts another option or another line) and the ``srun`` command line
(parsed by bash: ``;``, ``$( )``, quotes and spaces are syntax). Rather than
quote values nemo-run formats, each kind of value is held to the characters
its Slurm meaning can use, and anything else is refused when env.toml, the
recipe YAML or a ``run.env.KEY=...`` override is loaded, with the reason.

Env var values are the exception: any text is allowed, and
:func:`nemo_runspec.execution.executor.shell_value` quotes it so it stays data.
``startup_commands`` are shell by design and are not checked here.
"""

from __future__ import annotations

import re

#: container_image values that mean "no container" (compared stripped, lower-case)
DISABLED_IMAGES = frozenset({"", "none", "null"})

# kind -> (pattern the whole value must match, what it may contain)
KINDS: dict[str, tuple[re.Pattern[str], str]] = {
    # account, partition, qos: names; sbatch accepts comma-separated lists
    "slurm_name": (re.compile(r"[A-Za-z0-9_.+-]+(?:,[A-Za-z0-9_.+-]+)*"),
                   "letters, digits, '_', '.', '+', '-' (comma-separated for a list)"),
    "constraint": (re.compile(r"[A-Za-z0-9_.,:&|\[\]*()!+-]+"),
                   "feature names joined by & | , with [ ] ( ) * ! (Slurm constraint syntax)"),
    "nodelist": (re.compile(r"[A-Za-z0-9_.,\[\]+-]+"),
                 "node names and ranges such as n[1-4],gpu07"),
    "gres": (re.compile(r"[A-Za-z0-9_.,:=+-]+"), "gres specs such as gpu:a100:2"),
    "mem": (re.compile(r"[0-9]+[KMGTkmgt]?"), "a number with an optional K, M, G or T unit"),
    "job_name": (re.compile(r"[A-Za-z0-9_.+-]*"), "letters, digits, '_', '.', '+', '-'"),
    "image": (re.compile(r"[A-Za-z0-9_.:/@#+%=~-]+"),
              "an image reference (registry/name:tag, docker://..., nvcr.io#..., /path/x.sqsh)"),
    "path": (re.compile(r"[A-Za-z0-9_./~@+=,%:-]+"),
             "a path of letters, digits and _ . / ~ @ + = , % : - (no spaces or shell characters)"),
    "mount_part": (re.compile(r"[A-Za-z0-9_./~@+=%-]+"),
                   "letters, digits and _ . / ~ @ + = % - (no spaces, ',' or shell characters)"),
    "env_name": (re.compile(r"[A-Za-z_][A-Za-z0-9_]*"),
                 "a shell variable name: letters, digits and '_', not starting with a digit"),
    "srun_arg": (re.compile(r"[A-Za-z0-9_.,:=/@%+-]+"),
                 "one option word such as --mpi=pmix (no spaces or shell characters)"),
    "sbatch_value": (re.compile(r"[^\s\"'\\\x00-\x1f\x7f]+"),
                     "one word without spaces, quotes, backslashes or control characters"),
    "host": (re.compile(r"[A-Za-z0-9_.:\[\]-]+"), "a host name or address"),
}


def problem(kind: str, value: str) -> str | None:
    """None when ``value`` is a valid ``kind``; else why not (for an error message)."""
    pattern, allowed = KINDS[kind]
    if pattern.fullmatch(value):
        return None
    bad = next((c for c in value if not pattern.fullmatch(c) and c not in ",:[]"), None)
    shown = repr(bad) if bad is not None else "its shape"
    why = f"{value!r} cannot be used in the batch script (because of {shown}); allowed: {allowed}"
    if bad == "$":  # docs/env-toml.md, "$ in values"
        why += "; a $ here is not expanded on the cluster: write ${oc.env:VAR} for a variable of this machine"
    return why


def check(kind: str, value: str) -> str:
    """``value`` if valid, else ``ValueError`` with :func:`problem`'s text (for pydantic)."""
    reason = problem(kind, value)
    if reason is not None:
        raise ValueError(reason)
    return value
