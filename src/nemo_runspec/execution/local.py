"""Run a recipe on this machine: a staged job dir, startup commands once, then the script.

Without a profile (or with ``executor = "local"``) the job runs here: one
process per visible GPU under torchrun, or ``local_nproc`` processes on a CPU,
or plain python for ``ray``/``direct`` recipes (a Ray recipe starts its own
local Ray instance).
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nemo_runspec.env.resources import requested_processes
from nemo_runspec.errors import ExecutionError
from nemo_runspec.execution.output_copy import DRAIN_SECONDS, OutputCopy
from nemo_runspec.execution.runspec_cmd import LAUNCH_FILE
from nemo_runspec.job.settings import launch_of, lookup

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from nemo_runspec.job.compiled import CompiledJob
    from nemo_runspec.spec.models import Runspec


def visible_gpus(environ: Mapping[str, str] | None = None) -> int:
    """GPUs this machine offers, without importing torch.

    ``CUDA_VISIBLE_DEVICES`` wins when set (empty means none); otherwise the
    number of ``nvidia-smi -L`` lines; 0 when there is no driver.
    """
    import shutil
    import subprocess

    environ = os.environ if environ is None else environ
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"])
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def local_nproc(run_env: Mapping[str, Any], launch: str, *, gpus: int | None = None) -> int:
    """Processes for a local torchrun: one per GPU, else the CPU fallback.

    With GPUs: ``min(gpus_per_node, visible GPUs)`` (all visible when
    ``gpus_per_node`` is unset). Without a GPU: ``local_nproc`` (profile key or
    ``run.env.local_nproc``), default 1 — a CPU fallback so recipes still run
    on a laptop. ``ray``/``direct`` recipes always run as one process.
    """
    if launch != "torchrun":
        return 1
    gpus = visible_gpus() if gpus is None else gpus
    if gpus > 0:
        wanted = requested_processes(run_env) or gpus
        return max(1, min(wanted, gpus))
    return max(1, int(run_env.get("local_nproc") or 1))


def local_command(script_path: str, train_yaml: str, passthrough: Sequence[str], *,
                  launch: str, nproc: int = 1) -> list[str]:
    """The command that runs a recipe script here: torchrun, or plain python.

    A single process needs no launcher (and torchrun would add its own
    traceback to every failure), so ``nproc == 1`` runs plain python.
    """
    if launch == "torchrun" and nproc > 1:
        launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                    f"--nproc-per-node={nproc}"]
    else:
        launcher = [sys.executable]
    return [*launcher, str(script_path), "--config", str(train_yaml), *passthrough]


def execute_local(runspec: Runspec, job_config: DictConfig, *, passthrough: Sequence[str] = (),
                  job_dir: str | os.PathLike[str] | None = None,
                  extra_env: Mapping[str, str] | None = None) -> int:
    """Run a recipe on this machine in a staged job dir; return its exit code.

    The job dir (``job.yaml``, ``train.yaml``) is created atomically; startup
    commands run once, before the launcher (never once per worker); the script
    runs with the job dir as cwd and ``NEMOTRON_JOB_DIR`` set. Env vars: the
    runspec's ``env``, then ``run.env.env_vars`` (secrets stay in memory, this
    is the user's own machine), then ``extra_env``. With the runspec's
    ``setup`` or ``run.cmd`` the script starts through ``runspec_launch.sh`` in
    the job dir (:func:`local_launch_files`; docs/runspec/v1/spec.md section 7).
    """
    from nemo_runspec.config import (
        extract_train_config,
        generate_job_dir,
        save_configs,
        staged_job_dir,
    )

    run_env = lookup(job_config, "run", "env", default={}) or {}
    launch = launch_of(runspec)
    train_config = extract_train_config(job_config, for_remote=True)
    # the profile's job_dir (executor = "local"), else $NEMOTRON_HOME/jobs
    final = Path(job_dir) if job_dir else generate_job_dir(runspec.name, run_env.get("job_dir") or None)
    nproc = local_nproc(run_env, launch)
    launch_files = local_launch_files(runspec, final, passthrough, launch=launch, nproc=nproc)
    with staged_job_dir(final) as staging:
        save_configs(job_config, train_config, staging)
        for name, text in launch_files.items():
            (staging / name).write_text(text)
    from nemo_runspec.dollar import expand_all
    from nemo_runspec.execution.env_vars import runspec_env

    env = dict(os.environ)
    # expanded as the job's shell would: $NAME, ${NAME}, ${NAME:-x}; $$ is a $ (nemo_runspec.dollar)
    env.update(expand_all({**runspec_env(runspec), **{str(k): str(v) for k, v in
                                                       (run_env.get("env_vars") or {}).items()}}, env))
    env.update(extra_env or {})
    env["NEMOTRON_JOB_DIR"] = str(final)
    from nemo_runspec.runtime.procs import identity, this_host

    # what the job publishes must come from a run whose command still waits for it
    # (nemo_runspec.artifacts.registry refuses to publish for a launcher that is gone)
    env[LAUNCHER_ENV] = f"{this_host()}@{identity()}"
    # ... and whose command has not begun to stop it: the lease goes the moment the job
    # ends or an interrupt comes, before any signal, so a process that left the job's
    # group cannot publish while we are still stopping the rest
    lease = final / LEASE_FILE
    lease.touch()
    env[LEASE_ENV] = str(lease)
    print(f"job dir: {final}", file=sys.stderr)
    for cmd in run_env.get("startup_commands") or []:
        code = _run_tied(["bash", "-c", str(cmd)], cwd=final, env=env)
        if code != 0:
            raise ExecutionError(f"startup command failed with exit code {code}: {cmd}",
                                 key="startup_commands")
    if launch_files:
        # `python` in setup/run.cmd is this interpreter, as on a bare-metal Slurm node
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        cmd = ["bash", str(final / LAUNCH_FILE)]
    else:
        cmd = local_command(str(runspec.script_path), str(final / "train.yaml"), passthrough,
                            launch=launch, nproc=nproc)
    env.setdefault("PYTHONUNBUFFERED", "1")  # its output reaches us through a pipe: as it comes
    output = OutputCopy()
    code = run_child(cmd, cwd=final, env=env, output=output, lease=lease)
    say_ending(final, code, output.lines, recipe=runspec.name, errors=output.stderr_lines)
    return code


def say_ending(job_dir: Path, code: int, lines: Sequence[str], *, recipe: str | None = None,
               errors: Sequence[str] = ()) -> None:
    """After a run here, on stderr: how it ended (:mod:`nemo_runspec.runtime.ended`), the job's
    outcome line first, then ``job NAME: STATE (exit code N)``, then the job dir. Its output
    was just printed above, so no tail of it. ``errors``: its stderr alone, where its last
    error is looked for first."""
    from nemo_runspec.runtime.ended import of_output, summary_lines

    ending = of_output(job_dir.name, code, lines, recipe=recipe, interrupted=code == 130, errors=errors)
    for line in (*summary_lines(ending), f"  job dir: {job_dir}"):
        print(line, file=sys.stderr, flush=True)


def local_launch_files(runspec: Runspec, job_dir: str | os.PathLike[str], passthrough: Sequence[str] = (), *,
                       launch: str, nproc: int = 1) -> dict[str, str]:
    """``{name: text}`` of the launch script (and setup) a local run of ``runspec`` uses;
    empty without ``setup``/``run.cmd`` (:mod:`nemo_runspec.execution.runspec_cmd`).

    Once, here: cd to ``run.workdir`` when set, source ``setup``, then exec the
    command (``run.cmd``, or python; under torchrun with several processes,
    ``torch.distributed.run --standalone`` with ``run.cmd`` as each worker).
    """
    from nemo_runspec.execution import runspec_cmd as rc

    if not rc.uses_launch_script(runspec):
        return {}
    job_dir = str(job_dir)
    values = {"script": str(runspec.script_path), "config": os.path.join(job_dir, "train.yaml"),
              "args": list(passthrough), "job_dir": job_dir}
    if launch == "torchrun" and nproc > 1:
        command = shlex.join([sys.executable, "-m", "torch.distributed.run", "--standalone",
                              f"--nproc-per-node={nproc}"]) + " " + rc.torchrun_tail(runspec, **values)
    else:
        command = rc.script_command(runspec, python=sys.executable, **values)
    files = {}
    setup_path = None
    if runspec.run.setup:  # run.setup; the top-level setup only describes the image
        files[rc.SETUP_FILE] = rc.setup_text(runspec.run.setup_script)
        setup_path = os.path.join(job_dir, rc.SETUP_FILE)
    files[rc.LAUNCH_FILE] = rc.launch_text(command, setup_path=setup_path,
                                           workdir=runspec.run.workdir)
    return files


#: ``<host>@<pid>:<start time>`` of the ``nemotron`` process a local job runs under (:mod:`nemo_runspec.runtime.procs`)
LAUNCHER_ENV = "NEMOTRON_LAUNCHER"
#: path of a file that exists while the ``nemotron`` command still waits for the job's results
LEASE_ENV = "NEMOTRON_LAUNCH_LEASE"
LEASE_FILE = ".launch-lease"


def _run_tied(cmd: Sequence[str], *, cwd: str | os.PathLike[str], env: Mapping[str, str]) -> int:
    """Run ``cmd`` to its end as a child that cannot outlive this process; an interrupt
    stops it (and what it started) and is raised again."""
    from nemo_runspec.runtime import lifeline

    child = lifeline.spawn(list(cmd), cwd=cwd, env=dict(env))
    try:
        return child.wait()
    except BaseException:
        lifeline.stop_group(child.pid, grace=5.0)
        child.wait()
        raise
    finally:
        lifeline.release(child.pid)


#: Seconds an interrupted job gets to stop by itself (a Ray driver shuts its
#: local cluster down, torchrun stops its workers) before it is terminated.
INTERRUPT_GRACE = 20.0


def run_child(cmd: Sequence[str], *, cwd: str | os.PathLike[str], env: Mapping[str, str],
              grace: float = INTERRUPT_GRACE, output: OutputCopy | None = None,
              lease: Path | None = None) -> int:
    """Run ``cmd`` in its own process group and return its exit code, stopping
    everything it started when it ends or is interrupted. With ``output`` the child's
    stdout and stderr go through it (printed as they come, their end kept).

    The child gets its own session, so Ctrl-C reaches only this process, which
    passes SIGINT on to the child's whole group and waits up to ``grace``
    seconds (SIGTERM, then SIGKILL after that). Whatever the group still holds
    once the child is gone (Ray's raylet and agents of a local data prep, say)
    is terminated too. Returns 130 after an interrupt.

    The child cannot outlive this process (:mod:`nemo_runspec.runtime.lifeline`): if the
    ``nemotron`` process dies, SIGKILL included, the child and its group are
    stopped, so no orphan goes on to publish. ``lease`` (a file) is removed the
    moment the child ends or an interrupt comes, before any signal is sent.
    """
    import signal
    import subprocess

    from nemo_runspec.runtime import lifeline

    streams = output.popen_kwargs() if output is not None else {}
    try:
        child = lifeline.spawn(list(cmd), cwd=cwd, env=dict(env), **streams)
    except OSError as exc:
        raise ExecutionError(f"could not start {cmd[0]}: {exc}") from exc
    if output is not None:
        output.start(child)
    interrupted = 0
    try:
        while True:
            try:
                code = child.wait()
                break
            except KeyboardInterrupt as exc:
                if interrupted:  # a second Ctrl-C: stop at once
                    lifeline.signal_group(child.pid, signal.SIGKILL)
                    continue
                from nemo_runspec.runtime.signals import exit_code

                interrupted = exit_code(exc)  # 130 for Ctrl-C, 128 + N for SIGTERM/SIGHUP
                _end_lease(lease)
                print(f"interrupted: stopping the job (up to {grace:.0f}s; Ctrl-C again to kill it)",
                      file=sys.stderr)
                lifeline.signal_group(child.pid, signal.SIGINT)
                try:
                    code = child.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    lifeline.signal_group(child.pid, signal.SIGTERM)
                    try:
                        code = child.wait(timeout=5)
                        break
                    except subprocess.TimeoutExpired:
                        lifeline.signal_group(child.pid, signal.SIGKILL)
    finally:
        _end_lease(lease)
        lifeline.stop_group(child.pid, grace=5.0)  # what the group still holds; stops watching it
        if output is not None:
            # interrupted: what came is kept, and no process the job left behind holding its
            # pipes keeps this one alive (its publish is refused once we are gone)
            output.wait(0.1 if interrupted else DRAIN_SECONDS)
    return interrupted or code


def _end_lease(lease: Path | None) -> None:
    if lease is not None:
        lease.unlink(missing_ok=True)


def local_preview(runspec: Runspec, job_config: DictConfig, passthrough: Sequence[str] = ()) -> str:
    """The local command line :func:`execute_local` would run (job dir not yet known)."""
    run_env = lookup(job_config, "run", "env", default={}) or {}
    launch = launch_of(runspec)
    files = local_launch_files(runspec, "<job dir>", passthrough, launch=launch,
                               nproc=local_nproc(run_env, launch))
    if files:
        return "\n".join(f"# <job dir>/{name}\n{text.rstrip()}" for name, text in files.items())
    cmd = local_command(str(runspec.script_path), "<job dir>/train.yaml", passthrough,
                        launch=launch, nproc=local_nproc(run_env, launch))
    return " ".join(shlex.quote(c) if c != "<job dir>/train.yaml" else c for c in cmd)


def run_local(job: CompiledJob, *, extra_env: Mapping[str, str] | None = None,
              job_config: DictConfig | None = None, job_dir: str | os.PathLike[str] | None = None) -> int:
    """Run the compiled ``job`` here (:func:`execute_local`); return its exit code.

    The script learns which env.toml the command used (``NEMOTRON_ENV_FILE``), so
    what it publishes lands in the same artifact registry the CLI resolved;
    ``extra_env`` is added (a pipeline stage's key and id). ``job_config`` and
    ``job_dir`` replace the job's own (a sweep's point: its ``run.sweep``, its dir).
    """
    from nemo_runspec.job.last_step import take

    if take("local", job):  # a sweep runs its points itself
        return 0
    extra = {"NEMOTRON_ENV_FILE": str(job.env_file.path)} if job.env_file is not None else {}
    return execute_local(job.runspec, job.job_config if job_config is None else job_config,
                         passthrough=job.passthrough, job_dir=job_dir, extra_env={**extra, **(extra_env or {})})

