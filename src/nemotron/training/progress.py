"""Rank 0's progress lines, kept with their time and attempt in ``progress.jsonl``.

The fallback trainer prints ``[pretrain] step 10/30 | loss ...`` lines (docs/training.md).
A local run's output goes only to the terminal, and a Slurm log line carries no
time, so rank 0 also appends each line it prints to ``<job dir>/progress.jsonl``::

    {"t": 1718000000.123, "attempt": 0, "line": "[pretrain] step 10/30 | loss 7.2544 | ..."}

(``attempt`` is ``$SLURM_RESTART_COUNT``). ``nemotron report`` reads it
(:mod:`nemo_runspec.report`) with the same parser as the logs, so a local run's
job dir has curves and a timeline too. The job dir is the one the script runs
in (:func:`nemotron.training.entry.job_dir`: ``$NEMOTRON_JOB_DIR`` for a local
run, ``<job dir>/code`` on Slurm, where checkpoints go too). A file that cannot
be written costs one warning, never the run.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from .resilience import attempt

FILE = "progress.jsonl"


class ProgressLog:
    """Print a line and append it, timed, to ``progress.jsonl`` (one ``write`` per line)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory) / FILE
        self.attempt = attempt()
        self._fd: int | None = None
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            print(f"warning: progress lines are not kept ({self.path}: {exc.strerror})", file=sys.stderr)

    def __call__(self, line: str) -> None:
        print(line, flush=True)
        if self._fd is None:
            return
        record = json.dumps({"t": round(time.time(), 3), "attempt": self.attempt, "line": line})
        try:
            os.write(self._fd, (record + "\n").encode())
        except OSError:
            self.close()

    def close(self) -> None:
        """Stop appending (the lines are still printed)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


_current: ProgressLog | None = None


def start(directory: str | os.PathLike[str]) -> ProgressLog:
    """Open rank 0's progress log in ``directory``; :func:`say` appends to it from now on."""
    global _current
    if _current is not None:
        _current.close()
    _current = ProgressLog(directory)
    return _current


def say(line: str) -> None:
    """Print ``line``; also keep it when a progress log was :func:`start` ed (rank 0)."""
    if _current is None:
        print(line, flush=True)
    else:
        _current(line)
