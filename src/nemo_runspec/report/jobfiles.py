"""Read what a job left in its job dir, with one shell command (here, or over the job's SSH tunnel).

A report needs a few small files whole (``job.yaml``, the resilience records,
``progress.jsonl``), the lines of the logs that carry metrics or events (the
logs themselves may be gigabytes), their last lines (where the job says how it
ended), and the names of its profiles (``.nsys-rep``) and W&B offline runs. One
script (:func:`script`) prints all of it as marked sections; it runs through
``Remote.run`` for a Slurm job (a subprocess for a local tunnel, one SSH command
for an SSH tunnel) or as a subprocess for a local run's job dir, so both read
exactly the same way.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

#: files read whole, relative to the job dir
WHOLE = ("job.yaml", "train.yaml", "resilience/attempts.jsonl", "resilience/steps.jsonl",
         "progress.jsonl", "code/progress.jsonl", "resilience/summary.txt")
#: logs (globs, relative to the job dir): the script's output per attempt, the batch log, Ray's log
LOGS = ("log-*.out", "sbatch_*.out", "ray/logs/*.out")
#: the lines of a log a report reads (:mod:`nemo_runspec.report.logparse`); the rest stays there
LOG_LINES = (r"step [0-9]+/[0-9]+ \| loss |eval loss |saved checkpoint |resumed from |stopped after step "
             r"|final loss |(^|[]]:)published |[]] iteration |validation loss at |successfully saved checkpoint"
             r"|^nemotron: ")
#: lines of each log's end kept whole (the job's own last word: an error, the outcome line)
TAIL_LINES = 40
#: files listed, not read (globs, relative to the job dir; ``**`` not used: bounded depth)
LISTED = ("*.nsys-rep", "*/*.nsys-rep", "*/*/*.nsys-rep", "wandb/offline-run-*/run-*.wandb",
          "code/wandb/offline-run-*/run-*.wandb", "wandb/run-*/run-*.wandb", "code/wandb/run-*/run-*.wandb")
_MARK = "@@nemotron-report"


@dataclass
class JobFiles:
    """The files of one job dir that a report reads (paths relative to ``root``)."""

    root: str
    whole: dict[str, str] = field(default_factory=dict)
    #: log -> its metric and event lines, in order
    lines: dict[str, list[str]] = field(default_factory=dict)
    #: log -> its last lines
    tails: dict[str, list[str]] = field(default_factory=dict)
    listed: list[str] = field(default_factory=list)
    #: the job dir was not there (or not readable)
    missing: bool = False


def script(job_dir: str) -> str:
    """The shell script that prints the sections :func:`parse` reads (POSIX sh, grep, tail, ls)."""
    q = shlex.quote
    parts = [f"cd {q(job_dir)} 2>/dev/null || {{ echo '{_MARK} missing'; exit 0; }}"]
    parts.append(f"for f in {' '.join(q(f) for f in WHOLE)}; do "
                 f"[ -f \"$f\" ] && {{ echo \"{_MARK} whole $f\"; cat \"$f\"; echo; }}; done")
    parts.append(f"for f in {' '.join(LOGS)}; do [ -f \"$f\" ] || continue; "
                 f"echo \"{_MARK} lines $f\"; grep -a -E {q(LOG_LINES)} \"$f\"; "
                 f"echo \"{_MARK} tail $f\"; tail -n {TAIL_LINES} \"$f\"; echo; done")
    parts.append(f"echo '{_MARK} listed'; ls -1d {' '.join(LISTED)} 2>/dev/null")
    return "\n".join(parts) + "\nexit 0\n"


def parse(job_dir: str, text: str) -> JobFiles:
    """The sections printed by :func:`script`."""
    found = JobFiles(root=job_dir)
    kind, name, chunk = None, "", []

    def close() -> None:
        if kind == "whole":
            found.whole[name] = "\n".join(chunk)
        elif kind == "lines":
            found.lines[name] = [x for x in chunk if x]
        elif kind == "tail":
            found.tails[name] = [x for x in chunk if x.strip()]
        elif kind == "listed":
            found.listed.extend(x for x in chunk if x.strip())

    for line in text.split("\n"):
        if line.startswith(_MARK + " "):
            close()
            words = line[len(_MARK) + 1:].split(" ", 1)
            kind, name, chunk = words[0], (words[1] if len(words) > 1 else ""), []
            if kind == "missing":
                found.missing = True
            continue
        chunk.append(line)
    close()
    return found


def read_here(job_dir: str) -> JobFiles:
    """:func:`script` run on this machine."""
    proc = subprocess.run(["sh", "-c", script(job_dir)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, errors="replace")
    return parse(job_dir, proc.stdout)


def read_with(run: Callable[[str], tuple[int, str, str]], job_dir: str) -> JobFiles:
    """:func:`script` run through ``run`` (``Remote.run``: here, or over SSH)."""
    _rc, out, _err = run(script(job_dir))
    return parse(job_dir, out)
