"""The outcome line: one machine-readable line at the end of a job's log saying how it ended.

Every job the project launches (a recipe, preflight, data prep, evaluation, an
image squash) writes, as the last thing its own code prints, one line::

    nemotron-outcome: {"v": 1, "ok": false, "exit_code": 2, "message": "error: ...", ...}

:data:`MARKER` then a JSON object on the same line (no newline inside; keys
below). A launcher may add a prefix in front of it (torchrun's ``--tee``
writes ``[default0]:``, ``srun --label`` writes ``0: ``); readers accept any
run of such prefixes and nothing else, so a shell trace of a command that
prints the line (``+ printf ...``) is never taken for it. Keys of version 1
(docs/execution.md, "How a job ends"; new keys may be added, none renamed):

``v``          format version (1)
``ok``         true when the job did what it was asked
``exit_code``  the exit status the process ends with
``message``    one line: the error line exactly as the job printed it
               (``error: ...``), or on success the job's own summary line
``recipe``     the runspec name (``nano3/pretrain``), or null
``figures``    the key numbers of a success (``final_loss``, ``steps``,
               ``records``...), an object, maybe empty
``rank``       the global rank that wrote it (null outside a distributed job)
``node``       the node it ran on
``attempt``    Slurm's restart count (``SLURM_RESTART_COUNT``), or null
``time``       when it was written, UTC, ``YYYY-MM-DDTHH:MM:SSZ``

Who writes it: global rank 0 on success; on failure every rank that knows
why (so a log may hold the same failure once per rank). :func:`pick` chooses
the job's outcome from all lines of a log: those of the latest attempt, the
first failure among them, else the last line.

This module is imported on the cluster by the jobs and by the CLI that reads
their logs; it needs only the standard library.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

#: What starts the outcome line (after the launcher's prefixes).
MARKER = "nemotron-outcome: "
#: The format version written in ``"v"``.
VERSION = 1

# Launchers' line prefixes: torchrun's "[default0]:", torch's "[rank0]:", srun --label's "0: ".
_PREFIXES = r"(?:\[rank\d+\]: ?|\[[A-Za-z_]*\d+\]:|\d+: )*"
_LINE = re.compile("^" + _PREFIXES + re.escape(MARKER) + r"(\{.*\})\s*$")


@dataclass(frozen=True)
class Outcome:
    """How one job (or one of its ranks) ended; see the module docstring for the keys.

    ``source`` is not part of the line: ``"job"`` for a line the job wrote, or, for an
    outcome a reader worked out because the job wrote none, where it came from
    (``"slurm"``: Slurm's state or its own message; ``"log"``: the job's last error line;
    ``"exit code"``: nothing but the code).
    """

    ok: bool
    exit_code: int
    message: str
    recipe: str | None = None
    figures: Mapping[str, Any] = field(default_factory=dict)
    rank: int | None = None
    node: str | None = None
    attempt: int | None = None
    time: str | None = None
    source: str = "job"

    def to_json(self) -> dict[str, Any]:
        """The line's JSON object (``source`` left out)."""
        return {"v": VERSION, "ok": self.ok, "exit_code": self.exit_code, "message": self.message,
                "recipe": self.recipe, "figures": dict(self.figures), "rank": self.rank, "node": self.node,
                "attempt": self.attempt, "time": self.time}

    def to_line(self) -> str:
        """The outcome line, without the newline."""
        return MARKER + json.dumps(self.to_json(), ensure_ascii=False, separators=(", ", ": "), default=str)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Outcome:
        """Read one line's object; unknown keys are ignored, missing optional ones are null."""
        figures = data.get("figures")
        return cls(ok=bool(data["ok"]), exit_code=int(data["exit_code"]), message=one_line(str(data["message"])),
                   recipe=_str_or_none(data.get("recipe")), figures=dict(figures) if isinstance(figures, Mapping) else {},
                   rank=_int_or_none(data.get("rank")), node=_str_or_none(data.get("node")),
                   attempt=_int_or_none(data.get("attempt")), time=_str_or_none(data.get("time")))


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) made one space."""
    return " ".join(str(text).split())


def parse_line(line: str) -> Outcome | None:
    """The outcome in ``line``, or None when it is not an outcome line (or is malformed)."""
    if MARKER not in line:
        return None
    match = _LINE.match(line.rstrip("\r\n"))
    if match is None:
        return None
    try:
        data = json.loads(match.group(1))
        return Outcome.from_json(data) if isinstance(data, dict) else None
    except (ValueError, KeyError, TypeError):
        return None


def find_all(lines: Iterable[str]) -> list[Outcome]:
    """Every outcome line among ``lines``, in order."""
    return [o for o in map(parse_line, lines) if o is not None]


def pick(outcomes: list[Outcome]) -> Outcome | None:
    """The job's outcome among the lines of its log: of the latest attempt's lines,
    the first failure, else the last one (None without any)."""
    if not outcomes:
        return None
    latest = max((o.attempt or 0) for o in outcomes)
    mine = [o for o in outcomes if (o.attempt or 0) == latest]
    return next((o for o in mine if not o.ok), mine[-1])


def find(text: str) -> Outcome | None:
    """The job's outcome in the log ``text`` (:func:`pick` over :func:`find_all`)."""
    return pick(find_all(text.splitlines()))


# --------------------------------------------------------------------------- writing (in the job)


def _rank() -> int | None:
    """This process's global rank, None when no launcher gave it one."""
    from nemo_runspec.runtime.ranks import RANK_VARS

    for var in RANK_VARS:
        value = os.environ.get(var, "").strip()
        if value.isdigit():
            return int(value)
    return None


def current(ok: bool, exit_code: int, message: str, *, recipe: str | None = None,
            figures: Mapping[str, Any] | None = None) -> Outcome:
    """An :class:`Outcome` of this process: its rank, node, attempt and the time filled in."""
    attempt = os.environ.get("SLURM_RESTART_COUNT", "").strip()
    return Outcome(ok=ok, exit_code=int(exit_code), message=one_line(message), recipe=recipe,
                   figures=dict(figures or {}), rank=_rank(),
                   node=os.environ.get("SLURMD_NODENAME") or socket.gethostname(),
                   attempt=int(attempt) if attempt.isdigit() else None,
                   time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


def write(outcome: Outcome, stream: TextIO | None = None) -> None:
    """Print the outcome line on ``stream`` (stdout), after flushing stdout and stderr so
    that it comes after everything the process printed before."""
    stream = stream or sys.stdout
    for s in (sys.stderr, sys.stdout):
        try:
            s.flush()
        except (OSError, ValueError):
            pass
    try:
        stream.write(outcome.to_line() + "\n")
        stream.flush()
    except (OSError, ValueError):  # stdout closed: the exit code still says it
        pass


class Report:
    """What one process of a job says about its end: an entry point notes its error line
    (:meth:`error`, which also prints it) or its summary (:meth:`summary`), and
    :meth:`finish` writes the outcome line for the exit code it returns.

    On success only global rank 0 writes; on failure a rank writes when it noted an
    error (or is rank 0), so ranks that were merely stopped add nothing.
    """

    def __init__(self, recipe: str | None, *, stream: TextIO | None = None) -> None:
        self.recipe = recipe
        self.stream = stream
        self._error: str | None = None
        self._message: str | None = None
        self._figures: dict[str, Any] = {}
        self.written: Outcome | None = None

    @property
    def message(self) -> str | None:
        """The summary or error line noted so far (None before any)."""
        return self._error or self._message

    def error(self, line: str, *, file: TextIO | None = None) -> None:
        """Print the error ``line`` (on stderr) and keep it as this process's outcome message."""
        print(line, file=file or sys.stderr, flush=True)
        self._error = self._error or one_line(line)

    def note_error(self, line: str) -> None:
        """Keep ``line`` as the outcome message without printing it (it was printed already)."""
        self._error = self._error or one_line(line)

    def summary(self, message: str, **figures: Any) -> None:
        """This process's own summary line (of a success, or of a run stopped early) and its
        key figures (numbers, short strings; None values are left out)."""
        self._message = one_line(message)
        self._figures.update({k: v for k, v in figures.items() if v is not None})

    def finish(self, exit_code: int, *, default: str | None = None) -> int:
        """Write this process's outcome line for ``exit_code`` (see the class docstring) and
        return ``exit_code``. ``default`` is the message when none was noted."""
        if self.written is not None:
            return exit_code
        rank = _rank() or 0
        if exit_code == 0:
            if rank != 0:
                return exit_code
            outcome = current(True, 0, self._message or default or "done", recipe=self.recipe, figures=self._figures)
        else:
            if rank != 0 and self._error is None:
                return exit_code
            message = self._error or self._message or default or f"exit code {exit_code}"
            outcome = current(False, exit_code, message, recipe=self.recipe, figures=self._figures)
        self.written = outcome
        write(outcome, self.stream)
        return exit_code


def run(recipe: str | None, body: Callable[[Report], int]) -> int:
    """Call ``body(report)`` and end with the outcome line for the exit code it returns.

    An exception that escapes ``body`` is printed as Python would print it, then the
    line says ``Type: message`` and the exit code is 1 (so the line stays last);
    ``SystemExit`` and ``KeyboardInterrupt`` get their line and are raised again.
    """
    report = Report(recipe)
    try:
        code = body(report)
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if isinstance(exc.code, str):
            report.note_error(exc.code)
        report.finish(status)
        raise
    except KeyboardInterrupt:
        report.finish(130, default="interrupted")
        raise
    except Exception as exc:  # noqa: BLE001 - printed in full, then the line; the exit code says it failed
        traceback.print_exc()
        report.note_error(exception_line(exc))
        return report.finish(1)
    return report.finish(int(code or 0))


def exception_line(exc: BaseException) -> str:
    """The last line Python prints for ``exc``: ``ValueError: boom``."""
    lines = traceback.format_exception_only(type(exc), exc)
    return one_line(lines[-1]) if lines else type(exc).__name__


# --------------------------------------------------------------------------- shell


def shell_function() -> str:
    """A bash function ``emit_outcome OK EXIT_CODE MESSAGE [RECIPE]`` that prints the
    outcome line (``OK`` is ``true`` or ``false``), for jobs whose last word is a shell
    script's (the image squash, the Ray template's own failures). It writes the keys
    this module writes; ``figures`` stays empty."""
    return r'''emit_outcome() {  # OK EXIT_CODE MESSAGE [RECIPE]: the outcome line (nemo_runspec.outcome)
  local s=$3 r=null a=null
  s=${s//\\/\\\\}; s=${s//\"/\\\"}; s=$(printf '%s' "$s" | tr '\000-\037' ' ')
  if [[ -n "${4:-}" ]]; then r="\"$4\""; fi
  if [[ "${SLURM_RESTART_COUNT:-}" =~ ^[0-9]+$ ]]; then a=$SLURM_RESTART_COUNT; fi
  printf 'nemotron-outcome: {"v": 1, "ok": %s, "exit_code": %d, "message": "%s", "recipe": %s, "figures": {}, "rank": null, "node": "%s", "attempt": %s, "time": "%s"}\n' \
    "$1" "$2" "$s" "$r" "${SLURMD_NODENAME:-$(hostname)}" "$a" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}'''
