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

import os
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
    # (letters and digits of any script: a unicode path is one word to bash and sbatch)
    "path": (re.compile(r"[\w./~@+=,%:-]+"),
             "a path of letters, digits and _ . / ~ @ + = , % : - (no spaces or shell characters)"),
    "mount_part": (re.compile(r"[\w./~@+=%-]+"),
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


#: Longest job dir base (bytes): the job's own paths below it (experiments/<recipe>/<id>/<recipe>/
#: log-<job name>_<job id>_<attempt>.out, at most ~640 bytes) must stay under PATH_MAX (4096).
MAX_BASE_BYTES = 3400


def check_cluster_dir(base_dir: str | os.PathLike[str], *, from_profile: bool) -> None:
    """Refuse, in one line before anything is staged, a local job dir base that Slurm cannot be
    given: its path is pasted into the batch script (``srun --chdir``, ``--output``), so it is
    held to what a path there may contain (the ``path`` kind: no spaces or shell characters;
    letters of any script are fine), and to a length its files still fit under."""
    from pathlib import Path

    from nemo_runspec.errors import LocalPathError

    shown = os.fspath(base_dir)
    where = "the profile's job_dir" if from_profile else "$NEMOTRON_HOME/jobs"
    # (a local run's or another executor's job dir is never pasted into a script: any path there)
    fix = ("set job_dir in the profile to a directory without spaces or shell characters that the compute "
           "nodes see, or point NEMOTRON_HOME at one" if not from_profile
           else "set job_dir in the profile to a directory without spaces or shell characters")
    pattern = KINDS["path"][0]
    bad = next((c for c in shown if not pattern.fullmatch(c)), None)
    if bad is not None:
        raise LocalPathError(f"the job dir ({where}) holds {bad!r}, which the batch script of a Slurm job cannot "
                             "carry: its paths are pasted into it as they are (srun --chdir, --output)",
                             path=shown, hint=fix)
    size = len(os.fsencode(shown))
    longest = max((len(os.fsencode(part)) for part in Path(shown).parts), default=0)
    if size > MAX_BASE_BYTES or longest > 255:
        what = f"is {size} bytes long" if size > MAX_BASE_BYTES else f"has a name of {longest} bytes"
        raise LocalPathError(f"the job dir ({where}) {what}: the job's files below it would pass the "
                             "file system's limits (4096 bytes a path, 255 a name)", path=shown,
                             hint=fix.replace("a directory without spaces or shell characters", "a shorter directory"))
