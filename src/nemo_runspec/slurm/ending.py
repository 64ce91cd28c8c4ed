"""The end-of-job summary of a Slurm job: its logs read (the end of each, the latest
attempt's) into an :class:`~nemo_runspec.runtime.ended.Ending`.

``--run`` (after following a job), ``nemotron jobs status`` and ``nemotron jobs
logs`` print it (docs/execution.md, "How a job ends"): the outcome line first,
then ``job ID: STATE (exit code N)``, then for a job that did not succeed the
tails of the job's log and of the batch script's log with the noise folded away,
then the log paths. What it says and how it is printed is :mod:`nemo_runspec.runtime.ended`,
shared with the runs the CLI starts here; this module reads a Slurm job's files.
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING, Protocol

from nemo_runspec.runtime.ended import (  # noqa: F401 - the summary's names, also reachable from here
    DEBUG_TAIL_LINES,
    READ_BYTES,
    SLURM_REASONS,
    TAIL_LINES,
    Ending,
    derive,
    detail_lines,
    print_ending,
    read_file_tail,
    source_note,
    state_line,
    tail_of,
)
from nemo_runspec.runtime.lognoise import fold
from nemo_runspec.runtime.outcome import find_all, pick

if TYPE_CHECKING:
    from nemo_runspec.slurm.remote import Remote


class EndedJob(Protocol):
    """What the summary needs of a job (a ``SubmittedJob`` or a ledger ``Submission``)."""

    job_id: str
    log_path: str | None
    sbatch_log_path: str | None
    sbatch_path: str | None


def read_tail(remote: Remote, path: str | None, size: int = READ_BYTES) -> list[str]:
    """The lines of the last ``size`` bytes of the log at ``path`` (the first, cut, line
    dropped), [] when there is no such file."""
    if not path:
        return []
    if remote.local:
        return read_file_tail(path, size)
    rc, out, _ = remote.run(f"tail -c {size} {shlex.quote(path)} 2>/dev/null")
    if rc != 0:
        return []
    data = out.encode()
    lines = data.decode(errors="replace").splitlines()
    return lines[1:] if len(data) >= size and lines else lines


def latest_attempt_log(remote: Remote, log_path: str | None) -> str | None:
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


def read_ending(remote: Remote, job: EndedJob, *, state: str, exit_code: int | None,
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
        # a success is said by the job's own last line, never by the batch script's
        said = derive(state, exit_code, job_lines + batch_lines if failed else job_lines, recipe=recipe)
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
    ending.job_tail = tail_of(job_fold)
    ending.batch_tail = tail_of(batch_fold)
    for part in (job_fold, batch_fold):
        for kind, n in part.counts.items():
            ending.folded[kind] = ending.folded.get(kind, 0) + n
    return ending
