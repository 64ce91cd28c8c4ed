"""One job's :class:`~nemo_runspec.report.model.JobReport`, from what the launcher recorded.

Sources, for a Slurm job (``nemotron jobs`` finds it in the submission ledger)
and for a local run's job dir alike (:mod:`nemo_runspec.report.jobfiles` reads
them in one command, here or over the job's SSH tunnel):

- ``job.yaml``: command line, profile, settings and their sources, image,
  consumed artifacts (:mod:`nemo_runspec.report.identity`); ``packaging.json``
  in the local experiment dir: the packaged code's hash;
- metric lines: ``progress.jsonl`` when the trainer kept one (each line with
  its time and attempt: ``nemotron.training.progress``), else the logs, one per
  attempt (``log-<name>_<id>_<attempt>.out``; a Ray job's single log is split at
  its ``resumed from`` lines); ``resilience/steps.jsonl`` (every step's exact
  loss and time) replaces the logged training loss where present;
- ``resilience/attempts.jsonl``: each attempt's start, end, nodes and why it
  ended; without it, ``sacct -D`` gives one row per attempt (start, end, state);
- ``sacct``: submit, eligible, start and end times and the final state (one
  call per cluster, :func:`slurm_rows`);
- the job dir's ``.nsys-rep`` files and W&B offline runs (listed and linked).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nemo_runspec.report import identity as ident
from nemo_runspec.report.artifacts import resolve_consumed
from nemo_runspec.report.jobfiles import JobFiles
from nemo_runspec.report.logparse import LineParser, LogFacts
from nemo_runspec.report.model import TRAIN_LOSS, Attempt, Event, JobReport, Series

if TYPE_CHECKING:
    from nemo_runspec.slurm.jobs import JobState
    from nemo_runspec.slurm.ledger import Submission
    from nemo_runspec.slurm.remote import Remote

_ATTEMPT_LOG = re.compile(r"_(\d+)\.out$")
_SACCT_FIELDS = "JobIDRaw,State,Submit,Eligible,Start,End,ExitCode,NodeList"


def _jsonl(text: str) -> list[dict[str, Any]]:
    rows = []
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _slurm_time(value: str) -> float | None:
    """sacct's local ``2025-06-01T10:00:00`` as Unix seconds (None for Unknown/None)."""
    try:
        return time.mktime(time.strptime(value.strip(), "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


def _utc(stamp: str) -> float | None:
    """The ledger's ``2025-06-01T10:00:00Z`` as Unix seconds."""
    import calendar

    try:
        return float(calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")))
    except (ValueError, TypeError):
        return None


def slurm_rows(remote: Remote, job_ids: Iterable[str]) -> dict[str, list[dict[str, str]]]:
    """``job id -> sacct rows``, one row per attempt (``sacct -D``: a requeued job's earlier
    runs too), oldest first; ``{}`` when the cluster has no accounting."""
    ids = list(dict.fromkeys(str(j) for j in job_ids))
    if not ids:
        return {}
    rc, out, _ = remote.run(f"sacct -n -P -X -D -j {','.join(ids)} -o {_SACCT_FIELDS}")
    rows: dict[str, list[dict[str, str]]] = {}
    if rc != 0:
        return rows
    names = _SACCT_FIELDS.split(",")
    for line in out.splitlines():
        parts = line.split("|")
        if len(parts) == len(names) and parts[0] in ids:
            rows.setdefault(parts[0], []).append(dict(zip(names, parts, strict=True)))
    for found in rows.values():
        found.sort(key=lambda r: r["Submit"])
    return rows


def _seq_length(train_yaml: str) -> int | None:
    import yaml

    try:
        data = yaml.safe_load(train_yaml) or {}
    except yaml.YAMLError:
        return None
    for path in (("model", "seq_length"), ("data", "seq_length"), ("fallback", "seq_length")):
        node: object = data
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, int) and node > 0:
            return node
    return None


def _log_facts(files: JobFiles, seq_length: int | None) -> tuple[LogFacts, str]:
    """Metric points and events, from ``progress.jsonl`` when there is one, else the logs;
    and which of them it was."""
    parser = LineParser(seq_length=seq_length)
    for name in ("progress.jsonl", "code/progress.jsonl"):
        records = _jsonl(files.whole.get(name, ""))
        if records:
            for rec in records:
                parser.feed(str(rec.get("line") or ""), int(rec.get("attempt") or 0),
                            float(rec["t"]) if isinstance(rec.get("t"), int | float) else None)
            facts = parser.finish()
            facts.outcome = _outcome_from_tails(files) or facts.outcome
            return facts, name
    per_attempt = sorted((int(m.group(1)), name) for name in files.lines
                         if name.startswith("log-") and (m := _ATTEMPT_LOG.search(name)))
    if per_attempt:
        for number, name in per_attempt:
            for line in files.lines[name]:
                parser.feed(line, number)
        source = "logs"
    else:
        source = ""
        for name in sorted(n for n in files.lines if n.startswith("ray/")):
            number = 0
            for line in files.lines[name]:
                if "] resumed from " in line:
                    number += 1
                parser.feed(line, number)
            source = "logs"
    facts = parser.finish()
    facts.outcome = _outcome_from_tails(files) or facts.outcome
    return facts, source


def _outcome_from_tails(files: JobFiles) -> str:
    """The outcome of the last attempt's log (else of any log), read from its last lines."""
    from nemo_runspec.report.logparse import outcome_of

    logs = sorted(files.tails, key=lambda n: (n.startswith("sbatch_"), _attempt_of(n)), reverse=True)
    for name in logs:
        found = outcome_of(files.tails[name])
        if found:
            return found
    return ""


def _attempt_of(name: str) -> int:
    m = _ATTEMPT_LOG.search(name)
    return int(m.group(1)) if m else -1


def _series(facts: LogFacts, steps_jsonl: str, source: str) -> list[Series]:
    found: dict[tuple[str, int], Series] = {}
    exact = _jsonl(steps_jsonl)
    for metric, attempt, step, value, t in facts.points:
        if exact and metric == TRAIN_LOSS:
            continue
        found.setdefault((metric, attempt), Series(metric, attempt, source=source)).add(step, value, t)
    for row in exact:
        try:
            attempt, step, value = int(row["attempt"]), int(row["step"]), float(row["loss"])
        except (KeyError, TypeError, ValueError):
            continue
        t = float(row["t"]) if isinstance(row.get("t"), int | float) else None
        found.setdefault((TRAIN_LOSS, attempt), Series(TRAIN_LOSS, attempt, source="resilience/steps.jsonl")
                         ).add(step, value, t)
    return sorted(found.values(), key=lambda s: (s.metric, s.attempt))


def _attempts_from_records(text: str) -> list[Attempt]:
    found: dict[int, Attempt] = {}
    for rec in _jsonl(text):
        try:
            number = int(rec["attempt"])
        except (KeyError, TypeError, ValueError):
            continue
        att = found.setdefault(number, Attempt(number))
        t = float(rec["t"]) if isinstance(rec.get("t"), int | float) else None
        if rec.get("event") == "start":
            att.start, att.nodes = t, str(rec.get("nodes") or "")
        elif rec.get("event") == "end":
            att.end, att.kind, att.reason = t, str(rec.get("kind") or ""), str(rec.get("reason") or "")
            att.requeued = bool(rec.get("requeue"))
            step = str(rec.get("step") or "")
            att.step = int(step) if step.isdigit() else None
    return [found[k] for k in sorted(found)]


def _attempts_from_sacct(rows: list[dict[str, str]]) -> list[Attempt]:
    out = []
    for i, row in enumerate(rows):
        state = (row["State"].split() or [""])[0]
        running = state in ("RUNNING", "PENDING", "COMPLETING", "CONFIGURING")
        out.append(Attempt(i, start=_slurm_time(row["Start"]), end=None if running else _slurm_time(row["End"]),
                           nodes="" if row["NodeList"] in ("None assigned", "(null)") else row["NodeList"],
                           kind="" if running else state, requeued=state == "REQUEUED"))
    return out


def _time_of_step(series: list[Series]) -> dict[tuple[int, int], float]:
    """``(attempt, step) -> time`` from every series that has times."""
    out: dict[tuple[int, int], float] = {}
    for s in series:
        for step, t in zip(s.steps, s.times, strict=True):
            if t is not None:
                out.setdefault((s.attempt, step), t)
    return out


def _date_events(job: JobReport) -> None:
    """Give a time to the events their line did not date: the time of the same step in
    another record, else (a resume) the start of its attempt."""
    when = _time_of_step(job.series)
    starts = {a.number: a.start for a in job.attempts}
    for ev in job.events:
        if ev.t is None and ev.attempt is not None and ev.step is not None:
            ev.t = when.get((ev.attempt, ev.step))
        if ev.t is None and ev.kind == "resumed" and ev.attempt is not None:
            ev.t = starts.get(ev.attempt)


def assemble(job: JobReport, files: JobFiles, *, packaging: str | Path | None = None) -> JobReport:
    """Fill ``job`` from the files of its job dir (what :func:`slurm_job` and
    :func:`local_job` share)."""
    if files.missing:
        job.notes.append(f"job dir {files.root} is not there (or not readable) any more")
    job.identity = ident.from_job_yaml(files.whole.get("job.yaml", ""))
    if packaging is not None:
        job.identity.code = ident.code_of(packaging)
    facts, source = _log_facts(files, _seq_length(files.whole.get("train.yaml", "")))
    job.series = _series(facts, files.whole.get("resilience/steps.jsonl", ""), source)
    job.identity.published = facts.published
    job.outcome = facts.outcome
    records = files.whole.get("resilience/attempts.jsonl", "")
    if records.strip():
        job.attempts = _attempts_from_records(records)
    job.events.extend(facts.events)
    _date_events(job)
    job.logs = [os.path.join(files.root, n) for n in sorted(files.tails, key=lambda n: (n.startswith("sbatch_"),
                                                                                       _attempt_of(n)))]
    if source.endswith("progress.jsonl"):
        job.logs.append(os.path.join(files.root, source))
    job.profiles = sorted(os.path.join(files.root, n) for n in files.listed if n.endswith(".nsys-rep"))
    elsewhere = {s.key: s.value for s in job.identity.settings}.get("profiling.output_dir")
    if elsewhere and not job.profiles:
        job.notes.append(f"nsys reports go to {elsewhere} (run.profile.output_dir), outside the job dir: "
                         "not listed here")
    offline = sorted(os.path.join(files.root, n) for n in files.listed if n.endswith(".wandb"))
    if offline:
        job.notes.append("W&B runs of this job: " + ", ".join(offline)
                         + " (the curves above come from the job's own records; `wandb sync` uploads these)")
    if not job.series:
        job.notes.append("no training metrics recorded yet" if not facts.events else
                         "no training metrics in the logs")
    return job


def slurm_job(sub: Submission, files: JobFiles, state: JobState | None,
              rows: list[dict[str, str]]) -> JobReport:
    """A Slurm job's report from its ledger entry, job dir files, state and ``sacct -D`` rows."""
    job = JobReport(id=sub.job_id, name=sub.name, where="slurm", job_dir=sub.job_dir)
    packaging = Path(sub.local_exp_dir) / sub.name / "packaging.json" if sub.local_exp_dir else None
    assemble(job, files, packaging=packaging)
    job.identity.profile = job.identity.profile or (sub.profile or "")
    job.identity.env_file = sub.env_file or ""
    job.identity.recipe = job.identity.recipe or (sub.recipe or "")
    if state is not None:
        job.state = state.state
        job.exit_code = state.exit_code
    if not job.attempts and rows:
        job.attempts = _attempts_from_sacct(rows)
    job.submitted = _utc(sub.submitted_at)
    if rows:
        job.submitted = _slurm_time(rows[0]["Submit"]) or job.submitted
        eligible = _slurm_time(rows[0]["Eligible"])
        if eligible is not None and job.submitted is not None and eligible > job.submitted + 1:
            job.events.append(Event("eligible", eligible, 0, None, "eligible to start"))
        job.started = _slurm_time(rows[0]["Start"])
        if state is not None and state.finished:
            job.ended = _slurm_time(rows[-1]["End"])
    if job.started is None and job.attempts:
        job.started = job.attempts[0].start
    if job.ended is None and state is not None and state.finished and job.attempts:
        job.ended = job.attempts[-1].end
    # a requeued attempt reads the versions its first attempt resolved (artifacts/pins.py)
    first = min([t for t in (job.started, *(a.start for a in job.attempts)) if t is not None], default=None)
    job.notes += resolve_consumed(job.identity.consumed, first or job.submitted, env_file=sub.env_file)
    _attempt_events(job)
    return job


def _attempt_events(job: JobReport) -> None:
    _date_events(job)
    if job.submitted is not None:
        job.events.append(Event("submitted", job.submitted, None, None, "submitted"))
    for att in job.attempts:
        if att.start is not None:
            job.events.append(Event("started", att.start, att.number, None,
                                    f"attempt {att.number} started" + (f" on {att.nodes}" if att.nodes else "")))
        if att.requeued and att.end is not None:
            job.events.append(Event("requeued", att.end, att.number, att.step,
                                    f"attempt {att.number}: {att.reason or att.kind} -> requeued"))
    if job.ended is not None:
        job.events.append(Event("ended", job.ended, None, job.last_step, job.state))
    job.events.sort(key=lambda e: (e.t is None, e.t or 0.0))


def local_job(job_dir: str | Path, files: JobFiles) -> JobReport:
    """A local run's report from its job dir (``$NEMOTRON_HOME/jobs/<recipe>/<stamp>``)."""
    root = Path(job_dir)
    job = JobReport(id=root.name, name=root.parent.name, where="local", job_dir=str(root))
    assemble(job, files)
    job.identity.image = ""  # the runspec's image: not used by a run on this machine
    times = [t for s in job.series for t in s.times if t is not None]
    times += [e.t for e in job.events if e.t is not None]
    stamp = re.match(r"(\d{8}-\d{6})", root.name)
    if stamp:
        job.submitted = time.mktime(time.strptime(stamp.group(1), "%Y%m%d-%H%M%S"))
    job.started = min(times) if times else job.submitted
    finished = any(e.kind == "published" for e in job.events) or _finished(files)
    if job.outcome.startswith("error: "):
        job.state = "FAILED"
    elif finished:
        job.state = "COMPLETED"
    else:
        job.state = "UNKNOWN"
        job.notes.append("no end recorded: still running, or it stopped before its final line")
    if finished and times:
        job.ended = max(times)
    job.attempts = [Attempt(0, start=job.started, end=job.ended, kind=job.state if job.ended else "")]
    job.notes += resolve_consumed(job.identity.consumed, job.started)
    _attempt_events(job)
    return job


def _finished(files: JobFiles) -> bool:
    text = files.whole.get("progress.jsonl", "") + files.whole.get("code/progress.jsonl", "")
    return "] final loss " in text
