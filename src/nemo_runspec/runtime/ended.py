"""How a job ended, from what it printed: the outcome line it wrote, else one worked out
from its last lines and its final state, and the few lines the CLI prints about it.

The summary (docs/execution.md, "How a job ends") is the same wherever the job ran:

1. the job's outcome line (:mod:`nemo_runspec.runtime.outcome`): its own error line or
   its success summary; when the job wrote none (a user's script, a job Slurm
   killed), Slurm's own message, or the job's last error line, or the last line
   it printed (:func:`derive`);
2. ``job ID: STATE (exit code N)`` (:func:`state_line`);
3. for a job that did not succeed, the last lines of its logs with the noise
   folded away (:mod:`nemo_runspec.runtime.lognoise`), and the log paths
   (:func:`detail_lines`).

:mod:`nemo_runspec.slurm.ending` reads a Slurm job's logs into an :class:`Ending`;
a run here (:mod:`nemo_runspec.execution.local`, a Docker container) builds one from
the output it copied (:func:`of_output`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nemo_runspec.runtime.lognoise import Folded, last_error, last_said
from nemo_runspec.runtime.outcome import Outcome, find_all, one_line, pick

#: How much of the end of a log is read (the outcome line is among the last lines a job writes).
READ_BYTES = 256 * 1024
#: Lines of each log shown under a failed job (with ``--debug``, unfolded).
TAIL_LINES = 8
DEBUG_TAIL_LINES = 40

#: Why Slurm ended a job, for a job that could not say it itself.
SLURM_REASONS = {
    "TIMEOUT": "Slurm stopped the job at its time limit",
    "CANCELLED": "the job was cancelled (scancel, or by an administrator)",
    "OUT_OF_MEMORY": "the job ran out of memory: Slurm's memory limit ended it",
    "NODE_FAIL": "a node of the job failed",
    "PREEMPTED": "Slurm preempted the job",
    "BOOT_FAIL": "a node of the job failed to boot",
    "DEADLINE": "the job reached its deadline",
}
_STEPD = re.compile(r"slurmstepd(?:-\S+)?: error: (\*\*\* (?:JOB|STEP) \S+ .*\*\*\*|Detected \d+ oom.kill event.*)")



@dataclass
class Ending:
    """What :func:`print_ending` shows of one ended job."""

    job_id: str
    state: str
    exit_code: int | None
    outcome: Outcome
    log_path: str | None = None
    sbatch_log_path: str | None = None
    job_tail: list[str] = field(default_factory=list)
    batch_tail: list[str] = field(default_factory=list)
    folded: dict[str, int] = field(default_factory=dict)

    @property
    def succeeded(self) -> bool:
        """True when Slurm says COMPLETED with exit code 0 (the job's own word aside)."""
        return self.state == "COMPLETED" and not self.exit_code

    def to_json(self) -> dict[str, Any]:
        """The outcome as ``jobs status --json`` reports it (``source`` says who said it)."""
        return {**self.outcome.to_json(), "source": self.outcome.source}


def derive(state: str, exit_code: int | None, lines: Sequence[str], *, recipe: str | None = None) -> Outcome:
    """The outcome of a job that wrote no outcome line: Slurm's own message for a job
    Slurm ended (``*** JOB 12 ON n1 CANCELLED AT ... DUE TO TIME LIMIT ***``), else for a
    failure the job's last error line (:func:`nemo_runspec.runtime.lognoise.last_error`) and for a
    success the last line it printed (:func:`nemo_runspec.runtime.lognoise.last_said`), else its
    exit code."""
    code = 0 if exit_code is None else exit_code
    ok = state == "COMPLETED" and code == 0
    if state in SLURM_REASONS:
        said = [m.group(1) for line in lines if (m := _STEPD.search(line))]
        jobs = [s for s in said if s.startswith("*** JOB") or "oom" in s]
        message = (jobs or said or [SLURM_REASONS[state]])[-1]
        if message != SLURM_REASONS[state]:
            message = f"{SLURM_REASONS[state]}: {message}"
        return Outcome(ok=False, exit_code=code, message=message, recipe=recipe, source="slurm")
    said = last_said(lines) if ok else last_error(lines)
    if said is not None:
        return Outcome(ok=ok, exit_code=code, message=one_line(said), recipe=recipe, source="log")
    return Outcome(ok=ok, exit_code=code, message="done" if ok else f"exit code {code}", recipe=recipe,
                   source="exit code")


def of_output(label: str, exit_code: int, lines: Sequence[str], *, recipe: str | None = None,
              log_path: str | None = None, interrupted: bool = False, errors: Sequence[str] = ()) -> Ending:
    """The :class:`Ending` of a run the CLI started here (a local run, a Docker container)
    from the ``lines`` it printed: its outcome line, else :func:`derive`'s. ``label`` names
    it in the state line; the state is ``COMPLETED`` for exit code 0, ``INTERRUPTED``
    after a Ctrl-C, else ``FAILED``. ``errors``, its stderr alone where it was read apart,
    is where a failure's last error is looked for first: ``lines`` interleaves two pipes
    as they were read, which can put a line of stdout inside a traceback."""
    state = "COMPLETED" if exit_code == 0 else "INTERRUPTED" if interrupted else "FAILED"
    if state != "COMPLETED" and last_error(errors) is not None:
        lines_for_error: Sequence[str] = errors
    else:
        lines_for_error = lines
    said = pick(find_all(lines)) or derive(state, exit_code, lines_for_error, recipe=recipe)
    return Ending(job_id=label, state=state, exit_code=exit_code, outcome=said, log_path=log_path)


def read_file_tail(path: str | os.PathLike[str], size: int = READ_BYTES) -> list[str]:
    """The lines of the last ``size`` bytes of the file at ``path`` (the first, cut, line
    dropped), [] when it cannot be read."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            start = max(0, f.tell() - size)
            f.seek(start)
            data = f.read()
    except OSError:
        return []
    lines = data.decode(errors="replace").splitlines()
    return lines[1:] if start and lines else lines


def summary_lines(ending: Ending, *, secrets: Sequence[str] = (), tail: bool = False) -> list[str]:
    """The summary as plain lines: the outcome's message, :func:`state_line`, then
    :func:`detail_lines` (for a run whose output was just printed: ``tail`` False)."""
    from nemo_runspec.secrets import redact_text

    return [redact_text(ending.outcome.message, list(secrets)), state_line(ending),
            *detail_lines(ending, secrets=secrets, tail=tail)]


def tail_of(folded: Folded) -> list[str]:
    """The last :data:`TAIL_LINES` lines ``folded`` kept, without blank lines at either end."""
    lines = list(folded.kept)
    while lines and not lines[-1].strip():
        lines.pop()
    tail = lines[-TAIL_LINES:]
    while tail and not tail[0].strip():
        tail.pop(0)
    return tail


def state_line(ending: Ending) -> str:
    """``job 62: FAILED (exit code 15; rank 1 exited 2)``, and who said the outcome when the
    job did not."""
    outcome = ending.outcome
    code = "" if ending.exit_code is None else f"exit code {ending.exit_code}"
    if outcome.source == "job" and ending.exit_code is not None and outcome.exit_code != ending.exit_code:
        who = f"rank {outcome.rank}" if outcome.rank is not None else "the job"
        code += f"; {who} exited {outcome.exit_code}"  # a launcher's own code (torchrun, srun) differs
    code = f" ({code})" if code else ""
    note = source_note(outcome)
    return f"job {ending.job_id}: {ending.state}{code}" + (f"; {note}" if note else "")


def source_note(outcome: Outcome) -> str:
    """Who said ``outcome`` when the job did not ("" when it did)."""
    if outcome.source == "log":
        what = "last line" if outcome.ok else "last error"
        return f"the job wrote no outcome line: the line above is the {what} in its log"
    return {"slurm": "the line above is Slurm's, the job wrote no outcome line"}.get(outcome.source, "")


def detail_lines(ending: Ending, *, secrets: Sequence[str] = (), tail: bool = True) -> list[str]:
    """What follows the state line: for a job that did not succeed the tails of its logs
    (with ``tail``) and what was folded out of them; then the log paths."""
    from nemo_runspec.secrets import redact_text

    out: list[str] = []
    good = ending.outcome.ok and ending.succeeded
    if tail and not good:
        for label, lines in (("log", ending.job_tail), ("batch log", ending.batch_tail)):
            if lines:
                out.append(f"  last lines of the {label}:")
                out.extend(f"  | {redact_text(line, list(secrets))}" for line in lines)
        if ending.folded:
            counts = ", ".join(f"{n} line{'s' if n != 1 else ''} of {kind}" for kind, n in ending.folded.items())
            out.append(f"  (folded: {counts}; --debug shows them, the logs hold everything)")
    if ending.log_path:
        out.append(f"  log:       {ending.log_path}")
    if not good and ending.sbatch_log_path and ending.sbatch_log_path != ending.log_path:
        out.append(f"  batch log: {ending.sbatch_log_path}")
    return out


def print_ending(ending: Ending, console: Any, *, secrets: Sequence[str] = (), tail: bool = True) -> None:
    """Print ``ending`` on a rich ``console``: the outcome line, then :func:`state_line`, then
    :func:`detail_lines`. Values in ``secrets`` are masked."""
    from rich.markup import escape

    from nemo_runspec.secrets import redact_text

    style = "green" if ending.outcome.ok and ending.succeeded else "red"
    console.print(f"[{style}]{escape(redact_text(ending.outcome.message, list(secrets)))}[/]", soft_wrap=True,
                  highlight=False)
    console.print(f"[{style}]{escape(state_line(ending))}[/]", soft_wrap=True, highlight=False)
    for line in detail_lines(ending, secrets=secrets, tail=tail):
        console.print(line, soft_wrap=True, highlight=False, markup=False)
