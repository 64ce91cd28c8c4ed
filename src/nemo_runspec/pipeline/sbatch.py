"""The sbatch launcher: a whole pipeline in one Slurm allocation.

The nemo-run launcher (:func:`nemo_runspec.pipeline.chain.submit_slurm`) gives every
stage its own job, chained with ``afterok``; each stage then waits in the queue
again. The sbatch launcher asks for one allocation and runs the stages in it,
in order, without queueing between them:

- every running stage is prepared and staged exactly as the nemo-run launcher
  does it (same packaged code, same 0600 secrets file, the same sbatch script
  rendered by nemo-run), but not submitted on its own;
- one driver script, submitted once with ``sbatch``, runs the staged scripts
  one after another with ``bash`` inside its allocation. Their ``#SBATCH``
  lines are comments there; their ``srun`` lines use the allocation;
- the stages must ask for the same allocation (every ``#SBATCH`` line but the
  job name, output, time and dependencies): a stage's ``srun`` inherits the
  allocation's geometry and would otherwise run on the wrong nodes. A stage
  that differs is refused with a one-line error naming it and the line;
- the allocation's time limit is the sum of the stages' limits;
- each stage's output goes to the file it would have had as a job of its own
  (``%j`` is the allocation's id), so ``nemotron jobs logs`` finds it; the
  driver's own log has one line as each stage starts and ends;
- ``<run dir>/<stage>.rc`` holds each finished stage's exit code. The first
  failing stage ends the allocation with its code and the later stages are
  not run. A requeued allocation (``scontrol requeue``, a stage's retry)
  skips the stages that already ended with 0;
- job steps a stage leaves running are cancelled before the next one starts.

Inputs are resolved when each stage starts, as with the other launchers.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nemo_runspec.errors import ConfigError
from nemo_runspec.pipeline.chain import _ledger, _title, before_submit, new_pipe_id, stage_env
from nemo_runspec.pipeline.records import PipeSubmission, StagePlan, write_record
from nemo_runspec.slurm.limits import slurm_seconds, slurm_time

if TYPE_CHECKING:
    from nemo_runspec.job.compiled import CompiledJob
    from nemo_runspec.slurm.prepared import PreparedJob

#: ``#SBATCH`` options that may differ between stages (the driver sets its own)
PER_STAGE_OPTIONS = frozenset({"job-name", "J", "output", "o", "error", "e", "time", "t",
                               "dependency", "d", "kill-on-invalid-dep"})
#: name of the driver's directory inside the first running stage's experiment dir
RUN_DIR_NAME = "pipe"
DRIVER_NAME = "pipe_sbatch.sh"


@dataclass(frozen=True)
class Allocation:
    """A pipeline as one allocation: each running stage's prepared job and script, and the driver.

    Attributes:
        prepared: each running stage's job, by stage name, in order.
        scripts: each running stage's exact sbatch script (run with ``bash`` by the driver).
        driver: the driver's sbatch script.
        run_dir: where the driver, its log and the stages' ``.rc`` files live on the cluster.
    """

    prepared: dict[str, PreparedJob]
    scripts: dict[str, str]
    driver: str
    run_dir: str

    @property
    def driver_path(self) -> str:
        """The pipe driver script's path in the allocation's run dir."""
        return os.path.join(self.run_dir, DRIVER_NAME)

    def driver_log(self, job_id: str) -> str:
        """The driver's own log for allocation ``job_id``."""
        return os.path.join(self.run_dir, f"pipe_{job_id}.out")

    def stage_logs(self, job_id: str) -> dict[str, tuple[str, str]]:
        """``{stage: (output log, batch log)}`` for allocation ``job_id``."""
        from nemo_runspec.slurm.submission import log_paths

        return {name: log_paths(job, job_id) for name, job in self.prepared.items()}


# ------------------------------------------------------------------------ #SBATCH lines


def sbatch_options(script: str) -> list[tuple[str, str]]:
    """The ``#SBATCH`` options of ``script`` in order, as ``(name, value)``
    (``--nodes=2`` and ``-N 2`` both give a name without dashes)."""
    options = []
    for line in script.splitlines():
        if not line.startswith("#SBATCH"):
            continue
        body = line[len("#SBATCH"):].strip()
        if not body.startswith("-"):
            continue
        name, sep, value = body.lstrip("-").partition("=")
        if not sep:
            name, _, value = name.partition(" ")
        options.append((name.strip(), value.strip()))
    return options


def allocation_options(scripts: Mapping[str, str]) -> tuple[list[tuple[str, str]], str | None]:
    """The options every stage shares (in the first stage's order) and the summed time limit.

    Raises a one-line :class:`ConfigError` naming the first stage whose allocation differs.
    """
    names = list(scripts)
    shared: dict[str, list[tuple[str, str]]] = {}
    total, unlimited = 0, False
    for name in names:
        opts = sbatch_options(scripts[name])
        shared[name] = [(k, v) for k, v in opts if k not in PER_STAGE_OPTIONS]
        times = [v for k, v in opts if k in ("time", "t")]
        if times:
            total += slurm_seconds(times[-1])
        else:
            unlimited = True
    first = names[0]
    for name in names[1:]:
        if shared[name] != shared[first]:
            ours, theirs = dict(shared[first]), dict(shared[name])
            diff = next(k for k in dict.fromkeys([*ours, *theirs]) if ours.get(k) != theirs.get(k))
            raise ConfigError(
                f"stage {name} asks for {_option(diff, theirs)} but stage {first} for {_option(diff, ours)}: "
                "one allocation "
                "runs every stage on the same nodes",
                hint="give the stages the same resources (e.g. *.run.env.nodes=N), or use --launcher nemo-run",
            )
    return shared[first], None if unlimited else slurm_time(total)


def _option(name: str, options: Mapping[str, str]) -> str:
    return f"--{name}={options[name]}" if name in options else f"no --{name}"


# ------------------------------------------------------------------------ the driver


def render_driver(stages: Sequence[tuple[str, str, str]], options: Sequence[tuple[str, str]], *,
                  time_limit: str | None, job_name: str, run_dir: str, title: str) -> str:
    """The driver's sbatch script. ``stages`` are ``(name, staged script path, batch log
    path with %j)``; every path and name is shell-quoted."""
    q = shlex.quote
    lines = ["#!/bin/bash", "#", f"# Generated by nemotron: pipeline {title}, every stage in this one",
             "# allocation, in order (the sbatch launcher; docs/pipelines.md).", "#"]
    lines += [f"#SBATCH --{k}={v}" if v else f"#SBATCH --{k}" for k, v in options]
    lines += [f"#SBATCH --job-name={job_name}", f"#SBATCH --output={run_dir}/pipe_%j.out"]
    if time_limit:
        lines.append(f"#SBATCH --time={time_limit}")
    lines += ["", "set -uo pipefail", f"RUN_DIR={q(run_dir)}", ""]
    lines += [
        "end_leftover_steps() {  # job steps a stage left running (never the batch step itself)",
        '  local step',
        '  for step in $(squeue -h -s -j "$SLURM_JOB_ID" -o %i 2>/dev/null); do',
        '    case "$step" in *.batch|*.extern|*.interactive) ;; *) scancel "$step" 2>/dev/null || true ;; esac',
        "  done",
        "}",
        "run_stage() {  # run_stage NAME SCRIPT LOG: one staged script, its output to its own log",
        "  local name=$1 script=$2 log=${3//%j/$SLURM_JOB_ID} rc",
        '  if [[ -f "$RUN_DIR/$name.rc" && "$(cat "$RUN_DIR/$name.rc")" == 0 ]]; then',
        '    echo "[pipe] $name: ended with 0 in an earlier run of this allocation; not run again"',
        "    return 0",
        "  fi",
        '  rm -f "$RUN_DIR/$name.rc"',
        '  mkdir -p "$(dirname "$log")"',
        '  echo "[pipe] $name: started $(date -u +%Y-%m-%dT%H:%M:%SZ); output in $log"',
        '  bash "$script" >>"$log" 2>&1',
        "  rc=$?",
        "  end_leftover_steps",
        '  echo "$rc" > "$RUN_DIR/$name.rc.tmp" && mv -f "$RUN_DIR/$name.rc.tmp" "$RUN_DIR/$name.rc"',
        '  echo "[pipe] $name: ended $(date -u +%Y-%m-%dT%H:%M:%SZ) with exit code $rc"',
        "  return $rc",
        "}",
        "",
    ]
    names = [name for name, _, _ in stages]
    for i, (name, script, log) in enumerate(stages):
        rest = names[i + 1:]
        not_run = f"; not run: {', '.join(rest)}" if rest else ""
        lines.append(f"run_stage {q(name)} {q(script)} {q(log)} || "
                     f"{{ rc=$?; echo {q(f'[pipe] {name} failed{not_run}')}; exit $rc; }}")
    lines += ['echo "[pipe] every stage ended with 0"', ""]
    return "\n".join(lines)


def prepare_allocation(plans: Sequence[StagePlan], pipe_id: str, *,
                       build_packager: Callable[[CompiledJob], tuple[Any, Any]]) -> Allocation:
    """Prepare every running stage without dependencies, render each one's script and the driver."""
    from nemo_runspec import slurm
    from nemo_runspec.slurm.render import render_sbatch

    running = [p for p in plans if not p.skip]
    if not running:
        raise ConfigError("every stage is skipped: nothing to run in an allocation")
    prepared: dict[str, PreparedJob] = {}
    for plan in running:
        prepared[plan.name] = slurm.prepare_job(plan.job, *build_packager(plan.job),
                                                env_vars=stage_env(plan, pipe_id))
    scripts = {name: render_sbatch(job) for name, job in prepared.items()}
    options, time_limit = allocation_options(scripts)
    first = next(iter(prepared.values()))
    run_dir = os.path.join(first.remote_exp_dir, RUN_DIR_NAME)
    stages = []
    for name, job in prepared.items():
        batch_log = dict(sbatch_options(scripts[name])).get("output") or \
            os.path.join(job.job_dir, f"sbatch_{job.job_name}_%j.out")
        stages.append((name, job.sbatch_path, batch_log))
    title = _title(plans)
    driver = render_driver(stages, options, time_limit=time_limit, job_name=f"nemotron-{title}",
                           run_dir=run_dir, title=pipe_id)
    return Allocation(prepared, scripts, driver, run_dir)


# ------------------------------------------------------------------------ submission


def submit_allocation(plans: Sequence[StagePlan], *, build_packager: Callable[[CompiledJob], tuple[Any, Any]],
                      pipe_id: str | None = None, out: Callable[[str], None] | None = None) -> PipeSubmission:
    """Stage every running stage, then ``sbatch`` the driver once; record the pipe.

    All or nothing: when staging or the ``sbatch`` fails, every stage staged so
    far is removed again (its experiment dir and secrets file).
    """
    from nemo_runspec.execution.submit_env import submission_environment
    from nemo_runspec.slurm.prepared import SubmittedJob
    from nemo_runspec.slurm.remote import Remote
    from nemo_runspec.slurm.submission import _slurm_message, remove_staged, submit_detached

    say = out or (lambda msg: print(msg, file=sys.stderr, flush=True))
    pipe_id = pipe_id or new_pipe_id(_title(plans))
    alloc = prepare_allocation(plans, pipe_id, build_packager=build_packager)
    first = next(iter(alloc.prepared.values()))
    staged: list[PreparedJob] = []
    squash_ids: list[str] = []
    result = PipeSubmission(pipe_id, list(plans))
    try:
        # The driver travels with the first stage's experiment dir (rsync over SSH).
        local_run_dir = first.local_exp_dir / RUN_DIR_NAME
        local_run_dir.mkdir(parents=True, exist_ok=True)
        (local_run_dir / DRIVER_NAME).write_text(alloc.driver)
        for i, plan in enumerate(plans, 1):
            if plan.skip:
                say(f"[pipe {i}/{len(plans)}] {plan.name}: {plan.reason}")
                continue
            say(f"[pipe {i}/{len(plans)}] {plan.name}: staging (packaged, not submitted on its own)")
            job = alloc.prepared[plan.name]
            staged.append(job)
            sub = submit_detached(job, schedule=False)
            if sub.squash_job_id:
                squash_ids.append(sub.squash_job_id)
            squash_ids += [i for i in before_submit(plan) if i not in squash_ids]  # e.g. evaluator images
        secrets = [str(v) for job in staged for v in job.secrets.values()]
        deps = f" --dependency=afterok:{':'.join(squash_ids)}" if squash_ids else ""
        from nemo_runspec.slurm.sbatch import sbatch

        remote = Remote(first)
        with submission_environment(secrets):  # an interrupt stops sbatch (and cancels what it queued)
            rc, stdout, stderr = sbatch(["sbatch", "--requeue", "--parsable", *deps.split(), alloc.driver_path],
                                        script=alloc.driver_path, job_name=None, run=remote.run,
                                        local=remote.local)
        job_id = stdout.strip().split(";", 1)[0]
        if rc != 0 or not job_id.isdigit():
            from nemo_runspec.errors import SubmissionError

            raise SubmissionError(f"Slurm rejected the pipeline's allocation: {_slurm_message(stderr or stdout)}",
                                  hint="check partition/account/time in the env.toml profile")
    except BaseException:
        for job in staged:
            remove_staged(job)
        raise
    from nemo_runspec.runtime import lifeline

    for job in staged:  # the allocation has them now
        lifeline.keep(job.local_exp_dir)
    logs = alloc.stage_logs(job_id)
    for name, job in alloc.prepared.items():
        log, batch_log = logs[name]
        result.jobs[name] = SubmittedJob(job_id=job_id, job_dir=job.job_dir, name=job.name, prepared=job,
                                         log_path=log, sbatch_log_path=batch_log, sbatch_path=job.sbatch_path)
        _ledger(result.jobs[name], pipe_id)
    say(f"[pipe] one allocation for {', '.join(alloc.prepared)}: job {job_id}")
    result.record_path = write_record(result, launcher="sbatch", run_dir=alloc.run_dir,
                                      driver_log=alloc.driver_log(job_id))
    return result


# ------------------------------------------------------------------------ following


def follow_stages(remote: Any, job_id: str, stages: Sequence[tuple[str, str]], run_dir: str,
                  write: Callable[[bytes], None], say: Callable[[str], None], *, poll: float = 1.0) -> int:
    """Follow the stages of one allocation in order: each ``(name, log path)`` is copied
    to ``write`` as it grows until its ``.rc`` file appears (or the allocation ends).
    Returns the first failing stage's exit code, 0 when all ended with 0."""
    from nemo_runspec.slurm import jobs as sj

    for name, log in stages:
        rc_path = os.path.join(run_dir, f"{name}.rc")
        say(f"== {name} (job {job_id})")

        def ended(path: str = rc_path) -> bool:
            return sj.path_exists(remote, path)

        final = sj.follow_log(remote, job_id, log, write, poll=poll, until=ended)
        raw = remote.read_from(rc_path, 0).decode(errors="replace").strip()
        if raw.isdigit():
            code = int(raw)
        else:  # the allocation ended (cancelled, time limit, node failure) inside this stage
            say(f"pipe allocation {job_id} ended in stage {name}: {final.state}")
            return final.exit_code or 1
        if code != 0:
            say(f"stage {name} failed (exit {code}); the stages after it were not run")
            return code
    return 0


def follow_allocation(sub: PipeSubmission, *, poll: float = 1.0, out: Any = None) -> int:
    """``--run`` with the sbatch launcher: follow every stage's log in turn (see :func:`follow_stages`)."""
    from nemo_runspec.slurm.remote import Remote

    if not sub.jobs:
        return 0
    first = next(iter(sub.jobs.values()))
    stream = out or sys.stdout

    def write(data: bytes) -> None:
        stream.write(data.decode(errors="replace"))
        stream.flush()

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    run_dir = os.path.join(first.prepared.remote_exp_dir, RUN_DIR_NAME)
    stages = [(name, job.log_path) for name, job in sub.jobs.items()]
    try:
        return follow_stages(Remote(first.prepared), first.job_id, stages, run_dir, write, say, poll=poll)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: the command exits 128 + signal
        say(f"\nstopped following pipe {sub.pipe_id}; allocation {first.job_id} keeps running "
            f"(nemotron jobs logs -f {sub.pipe_id} follows it again, nemotron jobs cancel {sub.pipe_id} cancels it)")
        raise
