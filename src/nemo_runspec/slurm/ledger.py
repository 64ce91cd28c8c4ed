"""The submission ledger: every Slurm job this machine submitted, one JSON line each.

``$NEMOTRON_HOME/jobs/submissions.jsonl`` gets one line per job Slurm accepted
(:func:`record_submission`, called by :func:`nemo_runspec.slurm.submit` and by
the pipeline for each stage), so ``nemotron jobs`` can find a job by its id, its
name or its pipe without anyone remembering a job dir. A line holds::

    {"v": 1, "job_id": "168", "name": "nano3-pretrain", "slurm_name": "nemotron-nano3-pretrain",
     "recipe": "nano3/pretrain", "profile": "dev", "env_file": "/home/me/env.toml",
     "executor": "slurm", "tunnel": "ssh",
     "ssh": {"host": "login", "user": "me", "port": 22, "identity": "~/.ssh/id_ed25519"},
     "job_dir": "/lustre/me/jobs/nano3-pretrain/nano3-pretrain_1718..../nano3-pretrain",
     "local_exp_dir": "/home/me/.nemotron/jobs/experiments/nano3-pretrain/nano3-pretrain_1718...",
     "log_path": ".../log-nemotron-nano3-pretrain_168_0.out", "sbatch_log_path": "...",
     "sbatch_path": "...", "submitted_at": "2025-06-01T10:00:00Z", "pipe": null}

Only names, ids and paths are written, never a secret: every string is passed
through :func:`nemo_runspec.secrets.redact_text` with the job's secret values
first. ``ssh`` holds how the job's tunnel reached the cluster (host, user, port,
identity *path*) as it was used, command-line ``run.env`` overrides included;
``profile`` and ``env_file`` say where those came from.

Appends take an exclusive ``flock`` on the file opened with ``O_APPEND``, and
one ``write`` per line, so concurrent submissions never interleave; a line cut
short by a crash is skipped when reading (and the next writer starts a fresh
line). Recording the same job twice is harmless: lines with the same job id and
job dir are merged, later non-empty fields winning (a pipeline may add its pipe
id to a job that :func:`~nemo_runspec.slurm.submit` already recorded).

Pipelines are described by ``$NEMOTRON_HOME/pipes/<pipe id>.json``
(``{"id", "created", "profile", "env_file", "stages": [{"name", "job_id",
"job_dir", "depends_on", "skipped", ...}]}``), read by :func:`load_pipes`.

The functions other modules use:

- :func:`record_submission` ``(sub, *, pipe=None) -> None``: append a job; never raises
  for I/O (a job Slurm accepted must not look failed because its index could not
  be written): it warns on stderr instead;
- :func:`load_submissions` ``() -> list[Submission]``: every recorded job, oldest first;
- :func:`load_pipes` ``() -> list[Pipe]`` and :func:`load_pipe` ``(pipe_id)``;
- :func:`find` ``(ref) -> Submission | Pipe``: a job id, a job name (Slurm's name,
  ours, the recipe, or the experiment id) or a pipe id; unknown or ambiguous
  references are one-line :class:`~nemo_runspec.errors.CLIUsageError`\\ s.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nemo_runspec.errors import CLIUsageError

if TYPE_CHECKING:
    from nemo_runspec.slurm.prepared import SubmittedJob

#: Version of the line format (``"v"`` of every line).
FORMAT = 1
LEDGER_NAME = "submissions.jsonl"
#: Profile keys that say how the cluster is reached over SSH (none of them secret).
SSH_KEYS = ("host", "user", "port", "identity")


def ledger_path() -> Path:
    """``$NEMOTRON_HOME/jobs/submissions.jsonl``."""
    from nemo_runspec.paths import jobs_dir

    return jobs_dir() / LEDGER_NAME


def pipes_dir() -> Path:
    """``$NEMOTRON_HOME/pipes``."""
    from nemo_runspec.paths import pipes_dir as _pipes_dir

    return _pipes_dir()


@dataclass(frozen=True)
class Submission:
    """One recorded job (a line of the ledger, or a pipe stage the ledger lacks)."""

    job_id: str
    name: str
    job_dir: str
    recipe: str | None = None
    profile: str | None = None
    env_file: str | None = None
    executor: str = "slurm"
    tunnel: str = "local"
    ssh: Mapping[str, Any] = field(default_factory=dict)
    #: the experiment's local dir (holds ``packaging.json``); its name is the experiment id
    local_exp_dir: str | None = None
    log_path: str | None = None
    sbatch_log_path: str | None = None
    sbatch_path: str | None = None
    #: Slurm's job name (profile ``job_name_prefix`` + ``name``)
    slurm_name: str | None = None
    #: UTC, ``YYYY-MM-DDTHH:MM:SSZ``
    submitted_at: str = ""
    pipe: str | None = None
    squash_job_id: str | None = None
    #: the sweep this array job belongs to (``$NEMOTRON_HOME/sweeps/<id>.json``; docs/sweeps.md)
    sweep: str | None = None

    @property
    def exp_id(self) -> str | None:
        """The experiment id (``nano3-pretrain_1718...``), unique per submission."""
        return Path(self.local_exp_dir).name if self.local_exp_dir else None

    @property
    def secrets_path(self) -> str:
        """Where the job's 0600 secrets file is (or was) on the cluster."""
        from nemo_runspec.execution.secret_file import SECRET_FILE_NAME

        return os.path.join(self.job_dir, SECRET_FILE_NAME)

    def tunnel_values(self) -> dict[str, Any]:
        """The profile keys :meth:`nemo_runspec.slurm.Remote.for_profile` needs to reach
        the job's cluster: the recorded tunnel, else the one of ``profile`` in
        ``env_file`` (a one-line error when that cannot be read any more)."""
        if self.tunnel != "ssh":
            return {"tunnel": "local"}
        values = {k: v for k, v in self.ssh.items() if v not in (None, "")}
        if not values.get("host"):
            values = {**_profile_tunnel(self), **values}
        values.setdefault("remote_job_dir", self.job_dir)  # the tunnel wants one; any will do
        return {**values, "tunnel": "ssh"}

    def to_json(self) -> dict[str, Any]:
        """The ledger line (without the newline)."""
        data: dict[str, Any] = {"v": FORMAT}
        for f in fields(self):
            value = getattr(self, f.name)
            data[f.name] = dict(value) if isinstance(value, Mapping) else value
        return data

    @classmethod
    def from_json(cls, data: object) -> Submission:
        """A line read back; ``ValueError`` when it is not one (no job id or job dir)."""
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        for key in ("job_id", "job_dir"):
            if not isinstance(kwargs.get(key), str | int) or str(kwargs[key]) == "":
                raise ValueError(f"no {key}")
        kwargs["job_id"] = str(kwargs["job_id"])
        kwargs.setdefault("name", "")
        if not isinstance(kwargs.get("ssh") or {}, dict):
            raise ValueError("ssh is not an object")
        kwargs["ssh"] = dict(kwargs.get("ssh") or {})
        for key, value in list(kwargs.items()):
            if key != "ssh" and value is not None and not isinstance(value, str):
                kwargs[key] = str(value)
        return cls(**kwargs)


@dataclass(frozen=True)
class PipeStage:
    """One stage of a pipe record; ``job_id`` is None for a skipped stage."""

    name: str
    job_id: str | None
    job_dir: str | None
    depends_on: tuple[str, ...] = ()
    skipped: bool = False
    recipe: str | None = None
    log_path: str | None = None


@dataclass(frozen=True)
class Pipe:
    """A pipeline's record, ``$NEMOTRON_HOME/pipes/<id>.json``."""

    id: str
    created: str
    profile: str | None
    env_file: str | None
    stages: tuple[PipeStage, ...]
    path: Path | None = None
    #: ``nemo-run`` (a job per stage) or ``sbatch`` (every stage in one allocation)
    launcher: str = "nemo-run"
    #: the sbatch launcher's dir on the cluster (its driver, log and ``<stage>.rc`` files)
    run_dir: str | None = None
    driver_log: str | None = None

    def stage_submission(self, stage: PipeStage, recorded: Iterable[Submission] = ()) -> Submission | None:
        """The stage's job: its ledger line when there is one, else one made from the
        pipe record (its tunnel then comes from the pipe's profile and env file)."""
        if stage.job_id is None:
            return None
        for sub in recorded:
            if sub.job_id == stage.job_id and (stage.job_dir in (None, sub.job_dir)):
                return sub
        tunnel = "local"
        if self.profile and self.env_file:
            with contextlib.suppress(Exception):  # unreadable now: the local tunnel is all we know
                tunnel = str(_load_profile_values(self.profile, self.env_file).get("tunnel") or "local")
        return Submission(
            job_id=stage.job_id, name=stage.name, job_dir=stage.job_dir or "", recipe=stage.recipe,
            profile=self.profile, env_file=self.env_file, tunnel=tunnel, log_path=stage.log_path,
            submitted_at=self.created, pipe=self.id,
        )


# --------------------------------------------------------------------------- writing


def _secret_values(sub: SubmittedJob) -> list[str]:
    from nemo_runspec.secrets import find_secret_values

    job = sub.prepared
    if job is None:
        return []
    return [str(v) for v in (*job.secrets.values(), *find_secret_values(job.values)) if v]


def _scrub(value: object, secrets: list[str]) -> Any:
    """``value`` with every secret value and credential-shaped token masked."""
    from nemo_runspec.secrets import redact_text

    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, Mapping):
        return {k: _scrub(v, secrets) for k, v in value.items()}
    return value


def submission_of(sub: SubmittedJob, *, pipe: str | None = None) -> Submission:
    """The ledger entry of a submitted job (secrets masked, see the module docstring)."""
    job = sub.prepared
    values: Mapping[str, Any] = job.values if job is not None else {}
    tunnel = str(values.get("tunnel") or "local")
    ssh: dict[str, Any] = {}
    if tunnel == "ssh":
        ssh = {k: values[k] for k in SSH_KEYS if values.get(k) not in (None, "")}
        ssh.setdefault("user", os.environ.get("USER", "root"))  # what build_tunnel used
    entry = Submission(
        job_id=str(sub.job_id),
        name=sub.name,
        job_dir=sub.job_dir,
        recipe=job.recipe if job is not None else None,
        profile=job.profile if job is not None else None,
        env_file=job.env_file if job is not None else None,
        executor=str(values.get("executor") or "slurm"),
        tunnel=tunnel,
        ssh=ssh,
        local_exp_dir=str(job.local_exp_dir) if job is not None else None,
        log_path=sub.log_path,
        sbatch_log_path=sub.sbatch_log_path,
        sbatch_path=sub.sbatch_path,
        slurm_name=job.job_name if job is not None else None,
        submitted_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        pipe=pipe,
        squash_job_id=sub.squash_job_id,
    )
    secrets = _secret_values(sub)
    return Submission(**{f.name: _scrub(getattr(entry, f.name), secrets) for f in fields(entry)})


def append_entry(entry: Submission, path: str | os.PathLike[str] | None = None) -> Path:
    """Append ``entry`` as one line under an exclusive lock; return the ledger's path.

    Raises :class:`~nemo_runspec.errors.LocalPathError` when the file cannot be written.
    """
    from nemo_runspec.errors import LocalPathError
    from nemo_runspec.paths import ensure_dir, path_error

    target = Path(path) if path is not None else ledger_path()
    ensure_dir(target.parent)
    line = (json.dumps(entry.to_json(), separators=(",", ":"), sort_keys=False) + "\n").encode()
    try:
        fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError as exc:
        raise path_error(exc, target, "write the submission ledger") from exc
    try:
        from nemo_runspec.runtime.locks import flock_within

        try:  # each writer holds it for microseconds; without flock (some NFS), O_APPEND alone
            flock_within(fd, target, timeout=30.0)
        except TimeoutError as exc:
            raise LocalPathError(f"cannot write the submission ledger: {exc}", path=target) from None
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line  # the last writer died mid-line: never glue onto it
        view = memoryview(line)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    except OSError as exc:
        raise path_error(exc, target, "write the submission ledger") from exc
    finally:
        os.close(fd)  # releases the lock
    return target


def record_submission(sub: SubmittedJob, *, pipe: str | None = None) -> None:
    """Record a job Slurm accepted in the ledger (see the module docstring).

    ``sub`` is what :func:`~nemo_runspec.slurm.submit_detached` returned; ``pipe``
    the pipe id when the job is a stage of a pipeline (the stage itself is named
    in ``$NEMOTRON_HOME/pipes/<pipe>.json``). Never raises because the ledger
    cannot be written: it prints one ``warning:`` line on stderr and returns.
    """
    try:
        append_entry(submission_of(sub, pipe=pipe))
    except Exception as exc:  # noqa: BLE001 - the job is queued; only its index is missing
        print(f"warning: job {sub.job_id} was submitted but not recorded for `nemotron jobs`: {exc}",
              file=sys.stderr)


# --------------------------------------------------------------------------- reading


def read_ledger(path: str | os.PathLike[str] | None = None) -> tuple[list[Submission], int]:
    """``(entries, bad)``: the recorded jobs, oldest first and merged per job (see the
    module docstring), and how many lines could not be read (cut short, not JSON, not
    a job). A missing ledger is ``([], 0)``."""
    target = Path(path) if path is not None else ledger_path()
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        return [], 0
    except OSError as exc:
        from nemo_runspec.paths import path_error

        raise path_error(exc, target, "read the submission ledger") from exc
    merged: dict[tuple[str, str], Submission] = {}
    bad = 0
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            entry = Submission.from_json(json.loads(line.decode("utf-8")))
        except (ValueError, TypeError, UnicodeDecodeError):
            bad += 1
            continue
        key = (entry.job_id, entry.job_dir)
        old = merged.get(key)
        merged[key] = entry if old is None else _merge(old, entry)
    return list(merged.values()), bad


def _merge(old: Submission, new: Submission) -> Submission:
    changes = {f.name: getattr(new, f.name) for f in fields(new)
               if getattr(new, f.name) not in (None, "", {}) and f.name != "submitted_at"}
    return replace(old, **changes)


def load_submissions(path: str | os.PathLike[str] | None = None) -> list[Submission]:
    """Every recorded job, oldest first (unreadable lines skipped; see :func:`read_ledger`)."""
    return read_ledger(path)[0]


def _pipe_from_json(data: object, path: Path) -> Pipe:
    if not isinstance(data, dict) or not isinstance(data.get("id"), str) or not data["id"]:
        raise ValueError("no pipe id")
    stages = []
    for st in data.get("stages") or []:
        if not isinstance(st, dict) or not isinstance(st.get("name"), str):
            raise ValueError("bad stage")
        job_id = st.get("job_id")
        stages.append(PipeStage(
            name=st["name"], job_id=None if job_id in (None, "") else str(job_id),
            job_dir=st.get("job_dir") or None, depends_on=tuple(str(d) for d in st.get("depends_on") or ()),
            skipped=bool(st.get("skipped")), recipe=st.get("recipe"), log_path=st.get("log") or st.get("log_path"),
        ))
    return Pipe(id=data["id"], created=str(data.get("created") or ""), profile=data.get("profile"),
                env_file=data.get("env_file"), stages=tuple(stages), path=path,
                launcher=str(data.get("launcher") or "nemo-run"), run_dir=data.get("run_dir") or None,
                driver_log=data.get("driver_log") or None)


def load_pipe(pipe_id: str) -> Pipe | None:
    """The record of pipe ``pipe_id``, or None when there is none (or it is unreadable)."""
    if not pipe_id or "/" in pipe_id or pipe_id.startswith("."):
        return None
    path = pipes_dir() / f"{pipe_id}.json"
    try:
        return _pipe_from_json(json.loads(path.read_text(encoding="utf-8")), path)
    except (OSError, ValueError, TypeError):
        return None


def load_pipes() -> list[Pipe]:
    """Every readable pipe record, oldest first (by ``created``)."""
    root = pipes_dir()
    if not root.is_dir():
        return []
    pipes = [p for f in sorted(root.glob("*.json")) if not f.name.startswith(".")
             if (p := load_pipe(f.stem)) is not None]
    return sorted(pipes, key=lambda p: p.created)


def _describe(sub: Submission) -> str:
    when = sub.submitted_at.replace("T", " ").rstrip("Z") or "?"
    what = sub.recipe or sub.name
    where = f", profile {sub.profile}" if sub.profile else ""
    return f"{sub.job_id} ({what}, {when}{where})"


def with_pipe_stages(subs: list[Submission], pipes: list[Pipe]) -> list[Submission]:
    """The ledger's jobs, then the pipe stages it lacks (in pipe and stage order)."""
    known = list(subs)
    seen = {(s.job_id, s.job_dir) for s in subs}
    for pipe in pipes:
        for stage in pipe.stages:
            sub = pipe.stage_submission(stage, subs)
            if sub is not None and (sub.job_id, sub.job_dir) not in seen:
                known.append(sub)
                seen.add((sub.job_id, sub.job_dir))
    return known


def find(ref: str, *, submissions: list[Submission] | None = None,
         pipes: list[Pipe] | None = None) -> Submission | Pipe:
    """The job or pipe ``ref`` names: a pipe id, a Slurm job id, an experiment id, or a
    job name (ours ``nano3-pretrain``, Slurm's ``nemotron-nano3-pretrain``, or the
    recipe ``nano3/pretrain``). Jobs of pipe records that the ledger lacks count too.

    Raises a one-line :class:`~nemo_runspec.errors.CLIUsageError` when nothing
    matches (with a suggestion) or when a name matches several jobs (listing them,
    newest first: use a job id).
    """
    from nemo_runspec._suggest import did_you_mean

    ref = ref.strip()
    subs = load_submissions() if submissions is None else submissions
    pipes = load_pipes() if pipes is None else pipes
    for pipe in pipes:
        if pipe.id == ref:
            return pipe
    known = with_pipe_stages(subs, pipes)
    newest = sorted(known, key=lambda s: s.submitted_at, reverse=True)
    for matches in (
        [s for s in newest if s.job_id == ref],
        [s for s in newest if s.exp_id == ref],
        [s for s in newest if ref in (s.name, s.slurm_name, s.recipe)],
    ):
        if len(matches) == 1:
            return matches[0]
        if matches:
            shown = ", ".join(_describe(s) for s in matches[:8])
            more = f" and {len(matches) - 8} more" if len(matches) > 8 else ""
            raise CLIUsageError(f"{ref!r} matches {len(matches)} jobs: {shown}{more}",
                                hint="give a job id")
    names = {p.id for p in pipes}
    for s in known:
        names.update(x for x in (s.job_id, s.name, s.slurm_name, s.recipe) if x)
    hint = did_you_mean(ref, names) if names else None
    where = ledger_path()
    if not known and not pipes:
        raise CLIUsageError(f"no job or pipe {ref!r}: nothing was submitted from here yet ({where} is empty)",
                            hint="jobs are recorded when --run/--batch submits them")
    raise CLIUsageError(f"no job or pipe {ref!r} in {where}",
                        hint=hint or "`nemotron jobs list` shows the recorded jobs")


# --------------------------------------------------------------------------- env.toml


def _load_profile_values(profile: str, env_file: str) -> dict[str, Any]:
    from nemo_runspec.env import load_env_file, load_env_profile
    from nemo_runspec.job.settings import profile_values

    return profile_values(load_env_profile(profile, load_env_file(Path(env_file))))


def _profile_tunnel(sub: Submission) -> dict[str, Any]:
    """The tunnel keys of the job's profile, read from its env file again."""
    from nemo_runspec.errors import NemoRunspecError

    if not (sub.profile and sub.env_file):
        raise CLIUsageError(f"job {sub.job_id} went through an SSH tunnel, but its record names no "
                            "host and no profile to find one in", hint="check the ledger line")
    try:
        values = _load_profile_values(sub.profile, sub.env_file)
    except NemoRunspecError as exc:
        raise CLIUsageError(f"cannot reach job {sub.job_id}: its profile [{sub.profile}] in {sub.env_file} "
                            f"cannot be read any more: {exc.problem}", hint="restore that env.toml") from None
    return {k: values[k] for k in (*SSH_KEYS, "remote_job_dir", "job_dir") if values.get(k) not in (None, "")}
