"""Submit a :class:`PreparedJob`: place its files and secrets, ``sbatch`` it through nemo-run
(the steps of ``Experiment.run``, replayed by :class:`~nemo_runspec.slurm.launch.SlurmLaunch`).

All or nothing: when Slurm (or anything before it) refuses the job, the
experiment dir and the secrets file are removed again.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from nemo_runspec.errors import ExecutionError, SubmissionError
from nemo_runspec.slurm.limits import check_partition_limits
from nemo_runspec.slurm.monitor import detach, follow
from nemo_runspec.slurm.prepared import PreparedJob, SubmittedJob
from nemo_runspec.slurm.remote import make_remote_dir, place_files, place_secrets, remove_secrets
from nemo_runspec.slurm.render import launch_for
from nemo_runspec.slurm.summary import print_submission, submission_record

if TYPE_CHECKING:
    from nemo_run.core.execution.slurm import SlurmExecutor
    from nemo_run.core.tunnel.client import Tunnel
    from rich.console import Console

    from nemo_runspec.slurm.launch import SlurmLaunch


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


def submit_detached(job: PreparedJob, *, schedule: bool = True, announce: bool = True) -> SubmittedJob:
    """Package, upload and ``sbatch`` the job; return as soon as Slurm accepted it.

    With ``schedule`` false everything but the ``sbatch`` call is done (code,
    secrets file and script in place on the cluster) and the returned job has
    ``job_id == ""``: the sbatch launcher (:mod:`nemo_runspec.pipeline.sbatch`)
    runs such staged scripts one after another in a single allocation and calls
    :func:`remove_staged` for them when its own submission fails.

    An interrupt right after Slurm accepted the job re-raises with the job id in
    ``exc.accepted_job_id``; with ``announce`` (a job on its own) the job's JSON
    record goes to stdout and how to follow or cancel it to stderr. A caller that
    decides the job's fate itself (a pipeline cancels its whole chain) passes
    ``announce=False`` and says what happened.
    """
    from nemo_runspec._nemo_run import lean
    from nemo_runspec.execution.submit_env import submission_environment
    from nemo_runspec.execution.tunnels import probe_tunnel
    from nemo_runspec.runtime import lifeline

    lean()
    from nemo_runspec.job.run_config import quiet_nemo_run
    from nemo_runspec.runtime.signals import mark

    since = mark()  # only a signal during this submission makes a failure an interrupt
    probe_tunnel(job.values)
    executor = job.executor
    with quiet_nemo_run():  # before anything is created: a job its partition can never run
        check_partition_limits(_tunnel_runner(getattr(executor, "tunnel", None)),
                               partition=getattr(executor, "partition", None), nodes=getattr(executor, "nodes", 1),
                               time_limit=getattr(executor, "time", None), source=f"job {job.name}")
    sweep_unsubmitted(job.base_dir)
    try:
        job.local_exp_dir.mkdir(parents=True, exist_ok=True)
        marker = job.local_exp_dir / f"{SUBMITTING}.{os.getpid()}"
        marker.touch()
        lifeline.remove_if_killed(job.local_exp_dir)  # SIGKILL before Slurm has the job: nothing left
    except OSError as exc:
        raise ExecutionError(
            f"cannot create the job dir {job.local_exp_dir}: {exc.strerror or exc}",
            hint="check that NEMOTRON_HOME (or the profile's job_dir) is writable and has free space",
        ) from None
    launch = None
    squash_job: str | None = None
    try:
        # sbatch saves its environment in Slurm's state and passes it to the job:
        # the caller's secrets stay out of it (they reach the job via the 0600 file).
        with quiet_nemo_run(), submission_environment(job.secrets.values()):
            if job.git_mounts:
                _sync_git_mounts(job, executor)
            squash_job = _squash_first(job, executor)
            place_secrets(job)
            place_files(job)
            if job.is_ray:  # Slurm opens the --output file before the script can mkdir
                make_remote_dir(job, job.ray_log_dir)
            launch = launch_for(job, job.base_dir)
            launch.launch(schedule=schedule)
            if schedule:  # Slurm has the job: its files must stay (staged ones wait for their driver)
                lifeline.keep(job.local_exp_dir)
        job_id = _accepted_job_id(launch) if schedule else ""
        if job_id is None:
            raise ExecutionError(f"sbatch returned no Slurm job id for {job.name}")
        job_name = launch.executor.job_details.job_name or job.job_name
    except ExecutionError:
        _cleanup_failed(job)
        raise
    except BaseException as exc:
        # sbatch answered, or was stopped after queueing a job it could not cancel (slurm.sbatch)
        accepted = _accepted_job_id(launch) or getattr(exc, "accepted_job_id", None)
        if isinstance(exc, KeyboardInterrupt | SystemExit) and accepted:
            # Slurm already queued the job: its files must stay. Say how to reach it.
            import sys

            marker.unlink(missing_ok=True)
            lifeline.keep(job.local_exp_dir)
            exc.accepted_job_id = accepted  # type: ignore[union-attr] # a pipeline cancels it with the rest
            try:  # `nemotron jobs` must know it: the ledger, and the job id on stdout for scripts
                import json

                from nemo_runspec.slurm.ledger import record_submission

                log, sbatch_log = log_paths(job, accepted)
                sub = SubmittedJob(job_id=accepted, job_dir=job.job_dir, name=job.name, prepared=job,
                                   log_path=log, sbatch_log_path=sbatch_log, sbatch_path=job.sbatch_path,
                                   squash_job_id=squash_job)
                record_submission(sub)
                if announce:
                    print(json.dumps(submission_record(sub)), flush=True)
            except Exception:  # noqa: BLE001 - never hide the interrupt; the line below still names the job
                pass
            finally:
                if announce:
                    print(f"interrupted after Slurm accepted job {accepted} ({job.name}); it stays queued: "
                          f"nemotron jobs logs -f {accepted} follows it, nemotron jobs cancel {accepted} "
                          f"cancels it (or squeue -j {accepted}, scancel {accepted})", file=sys.stderr, flush=True)
            raise
        _cleanup_failed(job)
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        from nemo_runspec.runtime.signals import Interrupted, received

        if (sig := received(since)) is not None:
            # the signal reached a child (rsync, tar, ssh) first and invoke swallowed ours:
            # it is still an interrupt, not a failure to report
            raise Interrupted(sig) from None
        raise _submission_error(job, exc) from None
    marker.unlink(missing_ok=True)
    log, sbatch_log = log_paths(job, job_id, job_name)
    return SubmittedJob(
        job_id=job_id, job_dir=job.job_dir, name=job.name, prepared=job,
        log_path=log, sbatch_log_path=sbatch_log, sbatch_path=job.sbatch_path,
        squash_job_id=squash_job,
    )


def _sync_git_mounts(job: PreparedJob, executor: SlurmExecutor) -> None:
    """Clone or update the job's ``${auto_mount:...}`` repositories on the cluster, mount
    each one's commit in place of its placeholder, and record the commits in ``job.yaml``."""
    import sys

    from nemo_runspec.env import git_mounts
    from nemo_runspec.slurm.remote import Remote

    assert job.git_dir is not None
    for m in job.git_mounts:
        print(f"[auto_mount] {m.url}@{m.ref} -> {m.target} (cache {job.git_dir} on the cluster)",
              file=sys.stderr, flush=True)
    synced = git_mounts.sync(Remote(job).run, job.git_mounts, job.git_dir)
    real = {m.placeholder(job.git_dir): f"{path}:{m.target}" for m, path, _ in synced}
    executor.container_mounts = [real.get(x, x) for x in executor.container_mounts]
    if "job.yaml" in job.files:
        from omegaconf import OmegaConf

        cfg = OmegaConf.create(job.files["job.yaml"])
        OmegaConf.update(cfg, "run.provenance.git_mounts",
                         [{**m.as_dict(), "commit": commit} for m, _, commit in synced], force_add=True)
        job.files["job.yaml"] = OmegaConf.to_yaml(cfg)


def _tunnel_runner(tunnel: Tunnel | None) -> Callable[[str], tuple[int, str, str]]:
    """``cmd -> (rc, stdout, stderr)`` through a nemo-run tunnel (the one sbatch will use)."""
    def run(cmd: str) -> tuple[int, str, str]:
        if tunnel is None:
            return 1, "", "no tunnel"
        from nemo_runspec.execution.tunnels import run_via
        from nemo_runspec.slurm.client import SlurmConfigUnreadable, run_here

        try:
            return run_via(tunnel, cmd) if isinstance(tunnel, _ssh_tunnel()) else run_here(cmd)
        except SlurmConfigUnreadable:
            raise  # every later Slurm command would wait a minute for the same answer
        except Exception as exc:  # noqa: BLE001 - an unanswered check is no check; sbatch still decides
            return 1, "", str(exc)
    return run


def _ssh_tunnel() -> type:
    from nemo_run.core.tunnel.client import SSHTunnel

    return SSHTunnel


def log_paths(job: PreparedJob, job_id: str, job_name: str | None = None) -> tuple[str, str]:
    """``(job output log, batch script log)`` of ``job`` run as Slurm job ``job_id``
    (a Ray job's driver writes to the batch log, so both are that file)."""
    job_name = job_name or job.job_name
    if job.is_ray:
        sbatch_log = os.path.join(job.ray_log_dir, f"sbatch_{job_name}_{job_id}.out")
        return sbatch_log, sbatch_log
    return (os.path.join(job.job_dir, f"log-{job_name}_{job_id}_0.out"),
            os.path.join(job.job_dir, f"sbatch_{job_name}_{job_id}.out"))


#: Name (plus ``.<pid>``) of the marker an experiment dir holds until Slurm accepted its job.
SUBMITTING = ".nemotron-submitting"


def sweep_unsubmitted(base_dir: str | os.PathLike[str]) -> list[str]:
    """Remove experiment dirs under ``base_dir`` whose submission was killed
    (their ``.nemotron-submitting.<pid>`` marker names a process that is gone)."""
    from pathlib import Path

    from nemo_runspec.runtime.stale import is_stale, remove

    removed = []
    for marker in Path(base_dir).glob(f"experiments/*/*/{SUBMITTING}.*"):
        if is_stale(marker):
            remove(marker.parent)
            removed.append(str(marker.parent))
    return removed


def _submission_error(job: PreparedJob, exc: BaseException) -> ExecutionError:
    """Say which step failed: Slurm refusing the job, a command while packaging
    or copying, or the local disk."""
    result = _unexpected_exit(exc)
    if result is not None:
        command = str(getattr(result, "command", "") or "")
        output = str(result.stderr or result.stdout or "")
        if re.search(r"(^|[\s;&|/])sbatch\b", command) or not command:
            exited = getattr(result, "exited", None)
            where = "here" if job.tunnel_kind == "local" else f"on {job.values.get('host')}"
            if exited == 127 or "command not found" in output or "No such file or directory" in output \
                    and "sbatch" in output:
                return ExecutionError(
                    f"sbatch is not installed {where} (PATH has no sbatch); nothing was submitted",
                    hint="run from a machine with Slurm's client tools, or submit over SSH: tunnel = \"ssh\" "
                         "and host in the env.toml profile")
            if exited is not None and exited < 0 or exited in (129, 130, 137, 143):
                return ExecutionError(f"sbatch was stopped by a signal (exit {exited}) {where}; it may or may not "
                                      f"have queued job {job.name}",
                                      hint=f"check with: squeue --me --name {job.job_name}")
            if "No space left" in output or "Disk quota" in output:
                return ExecutionError(f"submitting job {job.name} failed {where}: {_command_message(output)}",
                                      hint="free space (or quota) where Slurm writes the job's files, and run again")
            if re.search(r"Unable to contact|Socket timed out|Connection refused|slurm_load|Zero Bytes", output):
                return ExecutionError(
                    f"could not reach the Slurm controller {where}: {_slurm_message(output)}; nothing was submitted",
                    hint="check that the cluster is up (sinfo), then run again")
            return SubmissionError(
                f"Slurm rejected job {job.name}: {_slurm_message(output)}",
                hint="check partition/account/time in the env.toml profile",
            )
        remote = job.tunnel_kind != "local" and not re.match(r"\s*(tar|rsync|git)\b", command)
        on = f" on {job.values.get('host')}" if remote else ""  # a command the tunnel ran there
        return ExecutionError(
            f"preparing job {job.name} failed before submission: `{_short(command)}` "
            f"exited {getattr(result, 'exited', '?')}{on}: {_command_message(output)}",
            hint=_disk_hint(output, job) or (_remote_dir_hint(command, job) if remote else None)
            or "nothing was submitted; fix the cause and run again",
        )
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        return ExecutionError(
            f"preparing job {job.name} failed before submission: {exc.strerror or exc}{where}",
            hint=_disk_hint(str(exc.strerror or exc), job) or "nothing was submitted",
        )
    return ExecutionError(f"submitting {job.name} failed: {exc}")


def _command_message(output: str) -> str:
    """The lines of a failed command's stderr that say why (not tar's summary line)."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    useful = [ln for ln in lines if "Exiting with failure status" not in ln] or lines
    return "; ".join(list(dict.fromkeys(useful))[:2]) or "no message"


def _short(command: str, limit: int = 120) -> str:
    return command if len(command) <= limit else command[: limit - 3] + "..."


def _remote_dir_hint(command: str, job: PreparedJob) -> str | None:
    """What to check when a ``mkdir`` on the cluster failed."""
    if not re.match(r"\s*mkdir\b", command):
        return None
    key = "remote_job_dir" if job.values.get("remote_job_dir") else "job_dir"
    return (f"nothing was submitted; check that {key} in the env.toml profile is a directory "
            f"you can write on {job.values.get('host')}")


def _disk_hint(message: str, job: PreparedJob) -> str | None:
    if "No space left" in message or "Disk quota" in message:
        return f"free space where the job is packaged ({job.local_exp_dir.parent}) and run again"
    return None


def _accepted_job_id(launch: SlurmLaunch | None) -> str | None:
    """The Slurm job id sbatch printed (``--parsable``: ``<id>[;<cluster>]``), if it got that far."""
    job_id = (launch.job_id if launch is not None else None) or ""
    return job_id.split(";", 1)[0].strip() or None


def _squash_first(job: PreparedJob, executor: SlurmExecutor) -> str | None:
    """Submit the image's squash job when its .sqsh is not there yet (or
    ``--force-squash``); the training job then waits for it (``afterok``)."""
    if job.squash is None:
        return None
    from nemo_runspec.execution.executor import _as_handle
    from nemo_runspec.slurm.remote import Remote
    from nemo_runspec.slurm.squash import ensure_squashed_image

    job_id = ensure_squashed_image(Remote(job).run, job.squash, force=job.force_squash)
    if job_id is not None:
        executor.dependency_type = "afterok"
        executor.dependencies = [*list(executor.dependencies or []), _as_handle(job_id)]
    return job_id


def _cleanup_failed(job: PreparedJob) -> None:
    """Remove what a submission that never reached Slurm created: the secrets file, the
    local experiment dir and, over SSH, the experiment dir on the cluster (a path of its own)."""
    remove_secrets(job)
    shutil.rmtree(job.local_exp_dir, ignore_errors=True)
    if job.tunnel_kind == "ssh":
        import contextlib
        import shlex

        from nemo_runspec.slurm.remote import Remote

        with contextlib.suppress(Exception):  # best effort: the cluster may be what failed
            Remote(job).run(f"rm -rf -- {shlex.quote(job.remote_exp_dir)}")


def remove_staged(job: PreparedJob) -> None:
    """Undo ``submit_detached(job, schedule=False)``: the secrets file on the cluster and
    the local experiment dir (best effort; a job that never ran leaves nothing behind)."""
    _cleanup_failed(job)


def submit(
    job: PreparedJob, *, attached: bool | None = None, console: Console | None = None, poll: float = 2.0,
    out: TextIO | None = None, on_interrupt: Callable[[SubmittedJob], str] | None = None,
) -> SubmittedJob:
    """Submit ``job``. Detached (``--batch``; the default follows ``job.mode``): print
    the summary and return at once. Attached:
    show queue state, stream the log to ``out`` (stdout) and set ``exit_code``
    from sacct. Ctrl-C asks (TTY) to detach or cancel; without a TTY it detaches;
    either way ``returncode`` is 130. Ctrl-C after Slurm accepted the job but
    before following began detaches the same way (the job id and how to follow
    it are printed). ``job.plan`` (what was packaged) is written to
    ``packaging.json`` in the local experiment dir once Slurm accepted the job,
    and the job is recorded in the submission ledger (:mod:`nemo_runspec.slurm.ledger`).
    """
    from nemo_runspec.job.last_step import take

    if job.compiled is not None and take("slurm", job.compiled, job):  # a sweep's point: it submits them itself
        return SubmittedJob(job_id="", job_dir=job.job_dir, log_path="", sbatch_log_path="",
                            sbatch_path=job.sbatch_path, name=job.name, prepared=job)
    from rich.console import Console

    console = console or Console(stderr=True)
    attached = job.attached if attached is None else attached
    sub = submit_detached(job)
    try:
        from nemo_runspec.slurm.ledger import record_submission

        record_submission(sub)  # for `nemotron jobs`; warns (never raises) when it cannot
        if job.plan is not None:
            job.plan.write_json(job.local_exp_dir / job.name / "packaging.json")
        print_submission(sub, console)
        if not attached:  # --batch: stdout holds one JSON line for scripts (job id, dir, commands)
            import json
            import sys

            print(json.dumps(submission_record(sub)), flush=True, file=sys.stdout)
    except KeyboardInterrupt:  # submitted already: never leave the user without the job id
        detach(sub, console)
        return sub
    if attached:
        follow(sub, console=console, poll=poll, out=out, on_interrupt=on_interrupt)
    return sub
