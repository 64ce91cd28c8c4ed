"""The end-of-job summary: why a Slurm job ended, in the few lines the CLI prints last.

``--run`` (after following a job), ``nemotron jobs status`` and ``nemotron jobs
logs`` print the same summary (docs/execution.md, "How a job ends"):

1. the job's outcome line (:mod:`nemo_runspec.outcome`): its own error line or
   its success summary; when the job wrote none (a user's script, a job Slurm
   killed), Slurm's own message or the job's last error line in its log
   (:func:`derive`);
2. ``job ID: STATE (exit code N)``, Slurm's word;
3. for a job that did not succeed, the last lines of the job's log and of the
   batch script's log with the noise folded away (shell tracing, torchrun's
   failure report, torch.distributed's connection messages:
   :mod:`nemo_runspec.lognoise`), and how many lines were folded; ``--debug``
   shows the lines as they are;
4. the paths of the logs, which always hold everything.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from nemo_runspec.lognoise import Folded, fold, last_error
from nemo_runspec.outcome import Outcome, find_all, one_line, pick

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


class EndedJob(Protocol):
    """What the summary needs of a job (a ``SubmittedJob`` or a ledger ``Submission``)."""

    job_id: str
    log_path: str | None
    sbatch_log_path: str | None
    sbatch_path: str | None


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


def read_tail(remote: Any, path: str | None, size: int = READ_BYTES) -> list[str]:
    """The lines of the last ``size`` bytes of the log at ``path`` (the first, cut, line
    dropped), [] when there is no such file."""
    if not path:
        return []
    if remote.local:
        try:
            with open(path, "rb") as f:
                f.seek(0, os.SEEK_END)
                start = max(0, f.tell() - size)
                f.seek(start)
                data = f.read()
        except OSError:
            return []
    else:
        rc, out, _ = remote.run(f"tail -c {size} {shlex.quote(path)} 2>/dev/null")
        if rc != 0:
            return []
        data, start = out.encode(), (1 if len(out.encode()) >= size else 0)
    lines = data.decode(errors="replace").splitlines()
    return lines[1:] if start and lines else lines


def latest_attempt_log(remote: Any, log_path: str | None) -> str | None:
    """The job log of the job's latest attempt: a requeued job (docs/resilience.md) writes
    ``log-NAME_ID_<attempt>.out`` per attempt; ``log_path`` is attempt 0's."""
    match = re.match(r"^(.*_)(\d+)\.out$", log_path or "")
    if match is None:
        return log_path
    prefix = match.group(1)
    if remote.local:
        import glob

        found = glob.glob(glob.escape(prefix) + "*.out")
    else:
        rc, out, _ = remote.run(f"ls -1d {shlex.quote(prefix)}*.out 2>/dev/null")
        found = out.split("\n") if rc == 0 else []
    attempts = [int(m.group(1)) for p in found if (m := re.fullmatch(re.escape(prefix) + r"(\d+)\.out", p.strip()))]
    return f"{prefix}{max(attempts)}.out" if attempts else log_path


def derive(state: str, exit_code: int | None, lines: Sequence[str], *, recipe: str | None = None) -> Outcome:
    """The outcome of a job that wrote no outcome line: Slurm's own message for a job
    Slurm ended (``*** JOB 12 ON n1 CANCELLED AT ... DUE TO TIME LIMIT ***``), else the
    job's last error line (:func:`nemo_runspec.lognoise.last_error`), else its exit code."""
    code = 0 if exit_code is None else exit_code
    ok = state == "COMPLETED" and code == 0
    if state in SLURM_REASONS:
        said = [m.group(1) for line in lines if (m := _STEPD.search(line))]
        jobs = [s for s in said if s.startswith("*** JOB") or "oom" in s]
        message = (jobs or said or [SLURM_REASONS[state]])[-1]
        if message != SLURM_REASONS[state]:
            message = f"{SLURM_REASONS[state]}: {message}"
        return Outcome(ok=False, exit_code=code, message=message, recipe=recipe, source="slurm")
    error = None if ok else last_error(lines)
    if error is not None:
        return Outcome(ok=False, exit_code=code, message=one_line(error), recipe=recipe, source="log")
    return Outcome(ok=ok, exit_code=code, message="done" if ok else f"exit code {code}", recipe=recipe,
                   source="exit code")


def read_ending(remote: Any, job: EndedJob, *, state: str, exit_code: int | None,
                debug: bool = False) -> Ending:
    """Read the ends of ``job``'s logs and work out its :class:`Ending` (see the module
    docstring). ``state`` and ``exit_code`` are Slurm's final word on it."""
    log_path = latest_attempt_log(remote, job.log_path)
    job_lines = read_tail(remote, log_path)
    said = pick(find_all(job_lines))
    separate = bool(job.sbatch_log_path) and job.sbatch_log_path != job.log_path
    failed = not (state == "COMPLETED" and not exit_code)
    batch_lines = read_tail(remote, job.sbatch_log_path) if separate and (failed or said is None) else []
    if said is None:
        recipe = getattr(job, "recipe", None) or getattr(getattr(job, "prepared", None), "recipe", None)
        said = derive(state, exit_code, job_lines + batch_lines, recipe=recipe)
    ending = Ending(job_id=str(job.job_id), state=state, exit_code=exit_code, outcome=said,
                    log_path=log_path, sbatch_log_path=job.sbatch_log_path)
    if not failed and said.ok:
        return ending
    own = [line for line in job_lines if not find_all([line])]
    if debug:
        ending.job_tail, ending.batch_tail = own[-DEBUG_TAIL_LINES:], batch_lines[-DEBUG_TAIL_LINES:]
        return ending
    script = read_tail(remote, job.sbatch_path) if batch_lines else []
    job_fold, batch_fold = fold(own), fold(batch_lines, script_lines=script)
    ending.job_tail = _tail(job_fold)
    ending.batch_tail = _tail(batch_fold)
    for part in (job_fold, batch_fold):
        for kind, n in part.counts.items():
            ending.folded[kind] = ending.folded.get(kind, 0) + n
    return ending


def _tail(folded: Folded) -> list[str]:
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
    return {"slurm": "the line above is Slurm's, the job wrote no outcome line",
            "log": "the job wrote no outcome line: the line above is the last error in its log"}.get(outcome.source, "")


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
