"""``nemotron jobs status``: one job (state, exit code, attempts, its outcome), every
stage of a pipe (and why a stage never ran), or a sweep's points (:mod:`.jobs_sweeps`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from nemotron.cli.commands import jobs_sweeps
from nemotron.cli.commands.jobs_common import (
    job_states,
    out,
    print_table,
    row_json,
    warn_bad_lines,
    when,
)
from nemotron.cli.commands.jobs_logs import job_ending, status_details

if TYPE_CHECKING:
    from nemo_runspec.slurm.jobs import JobState
    from nemo_runspec.slurm.ledger import Pipe, Submission


def status(ref: str, as_json: bool) -> None:
    """The body of ``nemotron jobs status REF``."""
    from nemo_runspec.slurm.ledger import Pipe, find, read_ledger

    if (sweep := jobs_sweeps.resolve(ref)) is not None:  # SWEEP or SWEEP:N (docs/sweeps.md)
        return jobs_sweeps.status(*sweep, as_json)
    subs, bad = read_ledger()
    warn_bad_lines(bad)
    found = find(ref, submissions=subs)
    if isinstance(found, Pipe):
        _pipe_status(found, subs, as_json)
        return
    tries: dict[str, list[Any]] = {}
    st = job_states([found], live=True, strict=True, attempts=tries)[(found.job_id, found.job_dir)]
    ending = job_ending(found, st) if st.finished else None
    if as_json:
        data = row_json(found, st, "", None, tries)
        if ending is not None:
            data["outcome"] = ending.to_json()
        out(json.dumps(data, indent=1))
        return
    _job_status(found, st, tries.get(found.job_dir, []), ending)


def _job_status(sub: Submission, st: JobState, attempts: list[Any] | None = None, ending: Any = None) -> None:
    from nemo_runspec.slurm.jobs import describe_tunnel

    exit_text = "-" if st.exit_code is None else f"{st.exit_code}" + (f" (sacct {st.raw_exit})" if st.raw_exit else "")
    lines = [("outcome", ending.outcome.message)] if ending is not None else []
    lines += [
        ("state", st.state + (f" ({st.note})" if st.note else "")),
        ("exit code", exit_text),
        ("reason", st.reason or "-"),
        ("nodes", st.nodes or "-"),
    ]
    if st.start or st.end:
        lines.append(("started", st.start or "-"))
        lines.append(("ended", st.end or "-"))
    lines += [
        ("recipe", sub.recipe or "-"),
        ("submitted", when(sub.submitted_at)),
        ("profile", f"{sub.profile or '-'}" + (f" ({sub.env_file})" if sub.env_file else "")),
        ("cluster", describe_tunnel(sub)),
        ("job dir", sub.job_dir or "-"),
        ("log", sub.log_path or "-"),
    ]
    if sub.sbatch_log_path and sub.sbatch_log_path != sub.log_path:
        lines.append(("batch log", sub.sbatch_log_path))
    if sub.pipe:
        lines.append(("pipe", sub.pipe))
    out(f"job {sub.job_id} ({sub.slurm_name or sub.name})")
    for label, value in lines:
        out(f"  {label + ':':11} {value}")
    if attempts:
        from nemo_runspec.slurm.attempts import lines as attempt_lines

        out("  attempts:")
        for text in attempt_lines(attempts):
            out(f"    {text}")
    for text in status_details(ending) if ending is not None else []:
        out(text)


def _pipe_status(pipe: Pipe, subs: list[Submission], as_json: bool) -> None:
    from nemo_runspec.slurm import jobs as sj

    members = [(st, pipe.stage_submission(st, subs)) for st in pipe.stages]
    states = job_states([s for _, s in members if s is not None], live=True, strict=True)
    by_stage = {stage.name: states[(sub.job_id, sub.job_dir)] for stage, sub in members if sub is not None}
    causes = _stopped_by(pipe, by_stage)
    if as_json:
        data = {"id": pipe.id, "created": pipe.created, "profile": pipe.profile, "env_file": pipe.env_file,
                "stages": []}
        for stage, sub in members:
            st = states.get((sub.job_id, sub.job_dir)) if sub is not None else None
            data["stages"].append({
                "name": stage.name, "job_id": stage.job_id, "depends_on": list(stage.depends_on),
                "skipped": stage.skipped, "state": st.state if st else sj.SKIPPED,
                "exit_code": st.exit_code if st else None,
                "reason": causes.get(stage.name) or (st.reason if st else ""),
                "job_dir": sub.job_dir if sub else None, "log_path": sub.log_path if sub else None,
            })
        out(json.dumps(data, indent=1))
        return
    out(f"pipe {pipe.id} (created {when(pipe.created)}, profile {pipe.profile or '-'})")
    rows = []
    for stage, sub in members:
        if sub is None:
            rows.append([stage.name, "-", sj.SKIPPED, "-", ", ".join(stage.depends_on) or "-", "-"])
            continue
        st = states[(sub.job_id, sub.job_dir)]
        rows.append([stage.name, sub.job_id, st.state, "-" if st.exit_code is None else str(st.exit_code),
                     ", ".join(stage.depends_on) or "-", causes.get(stage.name) or st.reason or st.nodes or "-"])
    print_table(["STAGE", "JOB", "STATE", "EXIT", "AFTER", "REASON/NODES"], rows)


def _stopped_by(pipe: Pipe, states: dict[str, JobState]) -> dict[str, str]:
    """Why a stage never ran: ``{stage: "dependency pretrain FAILED (exit 3)"}`` for each
    stage cancelled (by Slurm's --kill-on-invalid-dep or the following client) or left
    waiting on a dependency that can no longer be met, because a stage it waits for ended
    badly (the first such stage in pipe order; transitively, the one that failed)."""
    from nemo_runspec.slurm import jobs as sj

    depends = {stage.name: stage.depends_on for stage in pipe.stages}
    out: dict[str, str] = {}
    for stage in pipe.stages:
        st = states.get(stage.name)
        never_started = st is not None and st.start in ("", "Unknown", "None")
        blocked = st is not None and ((st.state.startswith("CANCELLED") and never_started)
                                      or (st.state == "PENDING" and "DependencyNeverSatisfied" in st.reason))
        if not blocked:
            continue
        for dep in depends[stage.name]:
            dst = states.get(dep)
            if dep in out:  # cancelled itself because of an earlier stage: name that one
                out[stage.name] = out[dep]
                break
            if dst is not None and dst.finished and dst.state != "COMPLETED" and dst.state != sj.SKIPPED:
                code = f" (exit {dst.exit_code})" if dst.exit_code else ""
                out[stage.name] = f"dependency {dep} {dst.state}{code}"
                break
    return out
