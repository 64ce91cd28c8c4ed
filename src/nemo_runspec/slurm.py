"""Submit, render and follow Slurm jobs through nemo-run.

Typical use from a recipe command (see docs/execution.md)::

    job = prepare_job(env=profile, mode="batch", runspec=spec, packager=packager,
                      script="pretrain.py", args=["--config", "train.yaml"],
                      env_vars=plain, secrets=secrets)
    if dry_run:
        print(render_sbatch(job))
    else:
        submitted = submit(job, attached=False)

Layout: the Experiment lives in ``<base_dir>/experiments/<title>/<exp_id>/`` locally;
the job dir the cluster sees is ``<tunnel job dir>/<title>/<exp_id>/<name>/`` (the
same path for a local tunnel). Logs: ``log-<job name>_<id>_0.out`` (the ``srun``
step, i.e. the script's output) and ``sbatch_<job name>_<id>.out`` (the batch
script itself, with shell tracing) in the job dir.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nemo_runspec.errors import ExecutionError, SubmissionError
from nemo_runspec.execution import (
    _container_image,
    _launch,
    bare_metal_env,
    create_executor,
    job_slug,
    profile_values,
)
from nemo_runspec.secret_file import SECRET_FILE_NAME

TERMINAL_STATES = {
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL",
    "PREEMPTED", "BOOT_FAIL", "DEADLINE", "REVOKED",
}


def default_base_dir(values: Mapping[str, Any] | None = None) -> Path:
    """Local Experiment base dir: profile ``job_dir`` (local tunnel) else
    ``$NEMOTRON_HOME/jobs`` (default ``~/.nemotron/jobs``)."""
    values = values or {}
    if (values.get("tunnel") or "local") == "local" and values.get("job_dir"):
        return Path(os.path.expanduser(str(values["job_dir"]))).absolute()
    from nemo_runspec.paths import jobs_dir

    return jobs_dir().absolute()


@dataclass
class PreparedJob:
    """Everything needed to render or submit one Slurm job."""

    name: str
    title: str
    exp_id: str
    base_dir: Path
    executor: Any
    script: str
    args: list[str]
    values: dict[str, Any]
    secrets: dict[str, str] = field(default_factory=dict)
    entrypoint: str = "python"
    launch: str = "direct"
    files: dict[str, str] = field(default_factory=dict)
    """Files written into the job dir before submission (name -> text), e.g. train.yaml."""

    @property
    def is_ray(self) -> bool:
        """True when the job runs as the driver of a Ray cluster (our template)."""
        return self.launch == "ray"

    @property
    def ray_log_dir(self) -> str:
        """Log dir of a Ray job (the template's ``$LOG_DIR``); exists before sbatch."""
        return os.path.join(self.job_dir, "ray", "logs")

    @property
    def tunnel_kind(self) -> str:
        """``local`` or ``ssh``."""
        return self.values.get("tunnel") or "local"

    @property
    def remote_exp_dir(self) -> str:
        """Experiment dir as seen by the cluster."""
        root = (
            os.path.join(str(self.base_dir), "experiments")
            if self.tunnel_kind == "local"
            else str(self.values.get("remote_job_dir") or self.values.get("job_dir"))
        )
        return os.path.join(root, self.title, self.exp_id)

    @property
    def job_dir(self) -> str:
        """Task dir as seen by the cluster (holds code/, logs, secrets file)."""
        return os.path.join(self.remote_exp_dir, self.name)

    @property
    def local_exp_dir(self) -> Path:
        """Experiment dir on the submitting machine."""
        return self.base_dir / "experiments" / self.title / self.exp_id

    @property
    def secret_path(self) -> str | None:
        """Path of the secrets file on the cluster (None without secrets)."""
        return os.path.join(self.job_dir, SECRET_FILE_NAME) if self.secrets else None

    @property
    def job_name(self) -> str:
        """Slurm job name (prefix + name)."""
        prefix = self.executor.job_name_prefix or ""
        return f"{prefix}{self.name}"

    @property
    def sbatch_path(self) -> str:
        """Where nemo-run writes the sbatch script on the cluster."""
        return os.path.join(self.remote_exp_dir, f"{self.name}_sbatch.sh")


@dataclass
class SubmittedJob:
    """A submitted job. ``exit_code`` is set when followed to the end (None if detached)."""

    job_id: str
    job_dir: str
    log_path: str
    sbatch_log_path: str
    sbatch_path: str
    name: str
    state: str = "PENDING"
    exit_code: int | None = None
    prepared: PreparedJob | None = None


def prepare_job(
    *,
    env: Any,
    mode: str,
    runspec: Any,
    packager: Any,
    script: str | os.PathLike[str],
    args: Sequence[str] = (),
    env_vars: Mapping[str, str] | None = None,
    secrets: Mapping[str, str] | None = None,
    startup_commands: Sequence[str] | None = None,
    name: str | None = None,
    base_dir: str | os.PathLike[str] | None = None,
    exp_id: str | None = None,
    dependencies: Sequence[str] | None = None,
) -> PreparedJob:
    """Build the executor and job layout. No file is written, no connection made.

    ``script`` is the path the job runs (relative to ``<job dir>/code`` where the
    packager extracts code, or absolute on the cluster). ``exp_id`` makes the job
    dir deterministic (``<title>_<suffix>``, no ``_`` in suffix); default is a
    nanosecond timestamp.
    """
    values = profile_values(env)
    name = job_slug(name or getattr(runspec, "name", None) or Path(str(script)).stem)
    title = name
    if exp_id is None:
        exp_id = f"{title}_{time.time_ns()}"
    elif exp_id.rpartition("_")[0] != title:
        raise ExecutionError(f"experiment id {exp_id!r} must look like '{title}_<suffix>'")
    base = Path(base_dir).absolute() if base_dir else default_base_dir(values)
    job = PreparedJob(
        name=name, title=title, exp_id=exp_id, base_dir=base, executor=None,
        script=str(script), args=[str(a) for a in args], values=values,
        secrets=dict(secrets or {}), launch=_launch(runspec),
    )
    bare_metal = _container_image(values, runspec) is None
    plain = dict(env_vars or {})
    if bare_metal and values.get("executor") == "slurm":
        # `python`/`torchrun`/`ray` resolve to the submitting venv through PATH. The
        # entrypoint stays "python": any other value makes nemo-run's torchrun
        # component pass --no-python and drop the interpreter.
        plain = bare_metal_env(plain)
    job.executor = create_executor(
        env=values, mode=mode, job_name=name, runspec=runspec, env_vars=plain,
        packager=packager, startup_commands=startup_commands, job_dir=base,
        secret_file=job.secret_path, dependencies=dependencies,
    )
    return job


def _task(job: PreparedJob) -> Any:
    import nemo_run as run

    if job.is_ray:
        from nemo_runspec.ray_slurm import ray_script

        return ray_script(job.script, job.args, entrypoint=job.entrypoint)

    return run.Script(path=job.script, args=list(job.args), entrypoint=job.entrypoint)


def _experiment(job: PreparedJob, base_dir: Path) -> Any:
    from nemo_runspec.run import experiment_class

    return experiment_class()(
        job.title, id=job.exp_id, base_dir=str(base_dir), clean_mode=True,
        enable_goodbye_message=False, skip_status_at_exit=True, log_level="ERROR",
    )


def render_sbatch(job: PreparedJob) -> str:
    """The exact sbatch script :func:`submit` would write, rendered offline.

    Runs nemo-run's own dry run in a temporary Experiment dir with a no-op packager
    (the packager never changes the script text), then deletes it: no SSH, no
    squeue, nothing left behind. Secrets appear only as the secrets-file path.
    """
    import nemo_run as run

    from nemo_runspec.run import quiet_nemo_run

    executor = job.executor.clone()
    if not getattr(executor.packager, "symlink_from_remote_dir", None):
        executor.packager = run.Packager()
    tmp = Path(tempfile.mkdtemp(prefix="nemotron-dryrun-"))
    try:
        with quiet_nemo_run():
            exp = _experiment(job, tmp)
            with exp:
                exp.add(_task(job), executor=executor, name=job.name)
                exp.dryrun(log=False, delete_exp_dir=False)
                exp._launched = False
        path = tmp / "experiments" / job.title / job.exp_id / f"{job.name}_sbatch.sh"
        text = path.read_text()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _assert_no_secret_values(text, job)
    return text


def _assert_no_secret_values(text: str, job: PreparedJob) -> None:
    for name, value in job.secrets.items():
        if value and len(str(value)) >= 4 and str(value) in text:
            raise ExecutionError(f"secret {name} would appear in the sbatch script; refusing")


# --------------------------------------------------------------------------- remote access


class _Remote:
    """Run commands / read files where the job runs (locally or over the tunnel)."""

    def __init__(self, job: PreparedJob) -> None:
        self.job = job
        self.local = job.tunnel_kind == "local"
        self._tunnel: Any = None

    @property
    def tunnel(self) -> Any:
        if self._tunnel is None:
            from nemo_runspec.tunnels import build_tunnel

            self._tunnel = build_tunnel(self.job.values, base_dir=self.job.base_dir)
        return self._tunnel

    def run(self, cmd: str) -> tuple[int, str, str]:
        if self.local:
            import subprocess

            p = subprocess.run(cmd, shell=True, capture_output=True, text=True,
                               stdin=subprocess.DEVNULL)
            return p.returncode, p.stdout, p.stderr
        r = self.tunnel.run(cmd, hide=True, warn=True)
        return r.return_code, r.stdout, r.stderr

    def read_from(self, path: str, offset: int) -> bytes:
        if self.local:
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    return f.read()
            except FileNotFoundError:
                return b""
        rc, out, _ = self.run(f"tail -c +{offset + 1} {shlex.quote(path)} 2>/dev/null")
        return out.encode() if rc == 0 else b""


def squeue_state(remote: _Remote, job_id: str) -> tuple[str, str, str] | None:
    """``(state, reason, nodes)`` from squeue, or None once the job left the queue."""
    rc, out, _ = remote.run(f"squeue -h -j {job_id} -o '%T|%r|%N'")
    line = out.strip().splitlines()[0] if rc == 0 and out.strip() else ""
    if not line:
        return None
    state, _, rest = line.partition("|")
    reason, _, nodes = rest.partition("|")
    return state.strip(), reason.strip(), nodes.strip()


def squeue_start(remote: _Remote, job_id: str) -> str | None:
    """Estimated start time from ``squeue --start`` (None when unknown)."""
    rc, out, _ = remote.run(f"squeue --start -h -j {job_id} -o '%S'")
    val = out.strip()
    return val if rc == 0 and val and val not in ("N/A", "Unknown") else None


def sacct_info(remote: _Remote, job_id: str) -> dict[str, str] | None:
    """``State, ExitCode, Start, End, NodeList`` of the job allocation from sacct."""
    rc, out, _ = remote.run(
        f"sacct -n -P -X -j {job_id} -o JobID,State,ExitCode,Start,End,NodeList"
    )
    for line in out.strip().splitlines() if rc == 0 else []:
        parts = line.split("|")
        if len(parts) >= 6 and parts[0] == str(job_id):
            return {"State": parts[1].split()[0], "ExitCode": parts[2], "Start": parts[3],
                    "End": parts[4], "NodeList": parts[5]}
    return None


def exit_code_from_sacct(state: str, exit_code: str) -> int:
    """Process-style exit code: ``N:0`` -> N, ``0:S`` -> 128+S; non-COMPLETED never 0."""
    code, _, sig = exit_code.partition(":")
    try:
        n, s = int(code or 0), int(sig or 0)
    except ValueError:
        n, s = 1, 0
    value = n if n else (128 + s if s else 0)
    if state == "COMPLETED":
        return value
    return value or 1


# --------------------------------------------------------------------------- submission


def _unexpected_exit(exc: BaseException) -> Any:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if hasattr(exc, "result") and hasattr(exc.result, "stderr"):
            return exc.result
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return None


def _slurm_message(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errs = [ln for ln in lines if "error" in ln.lower()] or lines
    msg = "; ".join(dict.fromkeys(errs)) or "sbatch failed"
    return re.sub(r"^sbatch:\s*", "", msg)


@contextlib.contextmanager
def _sftp(job: PreparedJob, *, mkdir_mode: str | None = None) -> Iterator[Any]:
    """An SFTP session on the job's ssh tunnel, with the job dir created first.

    A separate connection: the executor's tunnel is deep-copied by nemo-run later.
    """
    from nemo_runspec.tunnels import build_tunnel

    ssh = build_tunnel(job.values, base_dir=job.base_dir)
    try:
        ssh.connect()
        mode = f"-m {mkdir_mode} " if mkdir_mode else ""
        ssh.session.run(f"mkdir -p {mode}{shlex.quote(job.job_dir)}", hide=True)
        sftp = ssh.session.sftp()
        try:
            yield sftp
        finally:
            sftp.close()
    finally:
        ssh.cleanup()


def _place_secrets(job: PreparedJob) -> None:
    from nemo_runspec.secret_file import upload_secret_file, write_secret_file

    if not job.secrets:
        return
    if job.tunnel_kind == "local":
        write_secret_file(job.secret_path, job.secrets)  # type: ignore[arg-type]
        return
    with _sftp(job, mkdir_mode="700") as sftp:
        upload_secret_file(sftp, job.secret_path, job.secrets)


def _place_files(job: PreparedJob) -> None:
    """Write ``job.files`` into the job dir (locally, or over SFTP for ssh tunnels)."""
    if not job.files:
        return
    if job.tunnel_kind == "local":
        from nemo_runspec.config.jobdir import atomic_write_text

        os.makedirs(job.job_dir, exist_ok=True)
        for name, text in job.files.items():
            atomic_write_text(Path(job.job_dir) / name, text)
        return
    with _sftp(job) as sftp:
        for name, text in job.files.items():
            with sftp.open(os.path.join(job.job_dir, name), "w") as f:
                f.write(text.encode())


def _remove_secrets(job: PreparedJob) -> None:
    if not job.secrets:
        return
    if job.tunnel_kind == "local":
        with contextlib.suppress(OSError):
            os.unlink(job.secret_path)  # type: ignore[arg-type]
    else:
        with contextlib.suppress(Exception):
            _Remote(job).run(f"rm -f {shlex.quote(job.secret_path)}")


def submit_detached(job: PreparedJob) -> SubmittedJob:
    """Package, upload and ``sbatch`` the job; return as soon as Slurm accepted it."""
    from nemo_runspec.run import quiet_nemo_run
    from nemo_runspec.tunnels import probe_tunnel

    probe_tunnel(job.values)
    executor = job.executor
    job.local_exp_dir.mkdir(parents=True, exist_ok=True)
    exp = None
    try:
        with quiet_nemo_run():
            _place_secrets(job)
            _place_files(job)
            if job.is_ray:  # Slurm opens the --output file before the script can mkdir
                _make_remote_dir(job, job.ray_log_dir)
            exp = _experiment(job, job.base_dir)
            with exp:
                exp.add(_task(job), executor=executor, name=job.name)
                exp.run(detach=True)
        handle = exp.jobs[0].handle
        job_id = handle.split("://", 1)[1].split("/")[1]
        details = exp.jobs[0].executor.job_details
        job_name = details.job_name or job.job_name
    except ExecutionError:
        _cleanup_failed(job)
        raise
    except BaseException as exc:
        _cleanup_failed(job)
        result = _unexpected_exit(exc)
        if result is not None:
            raise SubmissionError(
                f"Slurm rejected job {job.name}: {_slurm_message(result.stderr or result.stdout)}",
                hint="check partition/account/time in the env.toml profile",
            ) from None
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        raise ExecutionError(f"submitting {job.name} failed: {exc}") from exc
    if job.is_ray:  # the driver's output goes to the batch log
        sbatch_log = os.path.join(job.ray_log_dir, f"sbatch_{job_name}_{job_id}.out")
        log = sbatch_log
    else:
        log = os.path.join(job.job_dir, f"log-{job_name}_{job_id}_0.out")
        sbatch_log = os.path.join(job.job_dir, f"sbatch_{job_name}_{job_id}.out")
    return SubmittedJob(
        job_id=job_id, job_dir=job.job_dir, name=job.name, prepared=job,
        log_path=log, sbatch_log_path=sbatch_log, sbatch_path=job.sbatch_path,
    )


def _make_remote_dir(job: PreparedJob, path: str) -> None:
    if job.tunnel_kind == "local":
        os.makedirs(path, exist_ok=True)
        return
    rc, _, err = _Remote(job).run(f"mkdir -p {shlex.quote(path)}")
    if rc != 0:
        raise ExecutionError(f"could not create {path} on {job.values.get('host')}: {err.strip()}")


def _cleanup_failed(job: PreparedJob) -> None:
    _remove_secrets(job)
    shutil.rmtree(job.local_exp_dir, ignore_errors=True)


def follow_commands(sub: SubmittedJob) -> list[tuple[str, str]]:
    """``(label, command)`` pairs for following and cancelling ``sub``."""
    prefix = ""
    if sub.prepared is not None and sub.prepared.tunnel_kind == "ssh":
        v = sub.prepared.values
        port = f" -p {v['port']}" if v.get("port") else ""
        ident = f" -i {v['identity']}" if v.get("identity") else ""
        prefix = f"ssh{port}{ident} {v.get('user') + '@' if v.get('user') else ''}{v['host']} "
    return [
        ("logs", f"{prefix}tail -f {sub.log_path}"),
        ("queue", f"{prefix}squeue -j {sub.job_id}"),
        ("status", f"{prefix}sacct -j {sub.job_id}"),
        ("cancel", f"{prefix}{_cancel_command(sub)}"),
    ]


def _cancel_command(sub: SubmittedJob) -> str:
    """``scancel``, plus removing the secrets file a never-started job leaves behind."""
    job = sub.prepared
    if job is None or not job.secrets or not job.secret_path:
        return f"scancel {sub.job_id}"
    rm = f"rm -f {shlex.quote(job.secret_path)}"
    if job.tunnel_kind == "ssh":
        return f"'scancel {sub.job_id}; {rm}'"  # one remote command line
    return f"scancel {sub.job_id}; {rm}"


def print_submission(sub: SubmittedJob, console: Any = None) -> None:
    """Rich summary: job id, job dir, log path and follow/cancel commands.

    Lines are never wrapped (``soft_wrap``): paths and commands stay copy-pasteable.
    """
    from rich.console import Console

    console = console or Console(stderr=True)
    console.print(f"[bold green]Submitted Slurm job {sub.job_id}[/] ({sub.name})", soft_wrap=True)
    console.print(f"  job dir: {sub.job_dir}", soft_wrap=True, highlight=False)
    console.print(f"  log:     {sub.log_path}", soft_wrap=True, highlight=False)
    for label, cmd in follow_commands(sub):
        console.print(f"  {label + ':':8} [cyan]{cmd}[/]", soft_wrap=True, highlight=False)


def submit(
    job: PreparedJob, *, attached: bool, console: Any = None, poll: float = 2.0,
    out: Any = None, on_interrupt: Callable[[SubmittedJob], str] | None = None,
) -> SubmittedJob:
    """Submit ``job``. Detached: print the summary and return at once. Attached:
    show queue state, stream the log to ``out`` (stdout) and set ``exit_code``
    from sacct. Ctrl-C asks (TTY) to detach or cancel; without a TTY it detaches.
    """
    from rich.console import Console

    console = console or Console(stderr=True)
    sub = submit_detached(job)
    print_submission(sub, console)
    if attached:
        follow(sub, console=console, poll=poll, out=out, on_interrupt=on_interrupt)
    return sub


def _ask_detach_or_cancel(sub: SubmittedJob) -> str:
    if sys.stdin is not None and sys.stdin.isatty():
        from rich.prompt import Prompt

        choice = Prompt.ask(f"\nJob {sub.job_id} is still running: [d]etach or [c]ancel it?",
                            choices=["d", "c"], default="d")
        return "cancel" if choice == "c" else "detach"
    return "detach"


def follow(
    sub: SubmittedJob, *, console: Any = None, poll: float = 2.0, out: Any = None,
    on_interrupt: Callable[[SubmittedJob], str] | None = None,
) -> int | None:
    """Follow a submitted job to its end; returns (and stores) its exit code,
    or None when the user detached."""
    from rich.console import Console

    console = console or Console(stderr=True)
    out = out or sys.stdout
    assert sub.prepared is not None
    remote = _Remote(sub.prepared)
    try:
        return _follow_loop(sub, remote, console, poll, out)
    except KeyboardInterrupt:
        action = (on_interrupt or _ask_detach_or_cancel)(sub)
        if action == "cancel":
            remote.run(f"scancel {sub.job_id}")
            console.print(f"[yellow]Cancelled job {sub.job_id}[/]")
            sub.state, sub.exit_code = "CANCELLED", 130
            return 130
        console.print(f"[yellow]Detached from job {sub.job_id}; it keeps running.[/]")
        for label, cmd in follow_commands(sub):
            console.print(f"  {label + ':':8} [cyan]{cmd}[/]", soft_wrap=True, highlight=False)
        return None


def _follow_loop(sub: SubmittedJob, remote: _Remote, console: Any, poll: float, out: Any) -> int:
    offset = 0
    last_state: tuple[str, ...] | None = None

    def pump() -> None:
        nonlocal offset
        data = remote.read_from(sub.log_path, offset)
        if data:
            offset += len(data)
            out.write(data.decode(errors="replace"))
            out.flush()

    while True:
        q = squeue_state(remote, sub.job_id)
        if q is None:
            break
        state, reason, nodes = q
        sub.state = state
        if state == "PENDING":
            key: tuple[str, ...] = (state, reason)
            if key != last_state:
                start = squeue_start(remote, sub.job_id)
                est = f", estimated start {start}" if start else ""
                console.print(f"[dim]job {sub.job_id}: PENDING ({reason}{est})[/]")
        else:
            key = (state, nodes)
            if key != last_state:
                console.print(f"[dim]job {sub.job_id}: {state} on {nodes}[/]")
        last_state = key
        pump()
        time.sleep(poll)
    info = None
    for _ in range(30):  # accounting may lag a little behind squeue
        info = sacct_info(remote, sub.job_id)
        if info and info["State"] in TERMINAL_STATES:
            break
        pump()
        time.sleep(1)
    pump()
    if not info or info["State"] not in TERMINAL_STATES:
        raise ExecutionError(f"could not get the final state of job {sub.job_id} from sacct",
                             hint="is Slurm accounting (slurmdbd) enabled?")
    sub.state = info["State"]
    sub.exit_code = exit_code_from_sacct(info["State"], info["ExitCode"])
    # A job cancelled or failed before its script ran never sourced (and so never
    # deleted) the secrets file: remove it now that the job is over.
    _remove_secrets(sub.prepared)
    style = "green" if sub.exit_code == 0 else "red"
    console.print(f"[{style}]job {sub.job_id}: {sub.state} (exit code {sub.exit_code})[/]")
    if sub.exit_code != 0:
        if sub.sbatch_log_path != sub.log_path:
            # Failures before the launcher (startup commands, srun) are only in the batch log.
            tail = remote.read_from(sub.sbatch_log_path, 0).decode(errors="replace").splitlines()[-12:]
            from nemo_runspec.secrets import redact_text

            secret_vals = list(sub.prepared.secrets.values()) if sub.prepared else []
            for line in tail:
                console.print(f"  | {redact_text(line, secret_vals)}", soft_wrap=True,
                              highlight=False, markup=False)
        console.print(f"  batch log: {sub.sbatch_log_path}", soft_wrap=True, highlight=False)
    return sub.exit_code
