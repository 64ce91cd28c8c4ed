"""Pipelines: recipe stages run in order, each consuming what the previous ones published.

:func:`compile_pipeline` compiles every :class:`~nemo_runspec.pipeline.step.Step` with the
usual rules, derives the dependency graph from the artifacts each stage
consumes (``${art:<key>,...}`` with ``run.<key>``) and publishes
(``publish.name``), and decides which stages can be skipped: a stage is skipped
when the newest version of its output artifact was published by a run of the
same stage with the same config and the same inputs (its *pipe key*, which the
job writes into the artifact's metadata through ``NEMOTRON_PIPE_FINGERPRINT``; an input
made by a pipe stage counts as that stage's key, whether that stage is selected in
this run or not, so ``--stages sft:eval`` after a full run skips like the full run). A stage whose
input comes from a stage that runs is never skipped. ``${art:...}`` is resolved when each stage starts, never at
submission, so a stage reads exactly what the stage before it published.

Launchers:

- :func:`run_local`: stages one after another on this machine, stopping at the
  first failure;
- :func:`submit_slurm` (nemo-run): every stage submitted at once through
  nemo-run's ``SlurmExecutor``, each waiting for its producers with
  ``--dependency=afterok:<ids>`` and ``--kill-on-invalid-dep=yes`` (a failed
  stage's dependants are cancelled by Slurm, never left pending);
- :func:`nemo_runspec.pipeline.sbatch.submit_allocation` (sbatch): every stage in
  one allocation, run in order by one driver script (no queueing between stages);
- :func:`prepare_stages` alone gives each stage's exact sbatch script (what
  ``--dry-run`` shows), with the producers' job ids as ``<stage>`` placeholders.

A step's ``prepare`` hook (:class:`~nemo_runspec.pipeline.step.Preparation`) makes its job
what its own command would run (the evaluation stage: ``--task`` selection,
env.toml ``[wandb]``, image imports); the Slurm launchers submit its
``before_submit`` jobs first and make the stage wait for them (``afterok``).

Every Slurm pipeline is recorded in ``$NEMOTRON_HOME/pipes/<id>.json`` so it can
be followed, inspected and cancelled later (``nemotron jobs ... PIPE_ID``); the record,
and the plans and submission it is made of, are :mod:`nemo_runspec.pipeline.records`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nemo_runspec.errors import CLIUsageError, ConfigError
from nemo_runspec.pipeline.records import PipeSubmission, StagePlan, chain_record, write_record
from nemo_runspec.pipeline.step import (
    Step,
    artifact_name,
    consumed_artifacts,
    published_artifact,
)

if TYPE_CHECKING:
    from nemo_runspec.cmdline.context import GlobalContext
    from nemo_runspec.job.compiled import CompiledJob
    from nemo_runspec.slurm.prepared import PreparedJob, SubmittedJob

#: environment variables a stage's job gets; publishing writes them into the artifact's metadata
PIPE_KEY_ENV, PIPE_ID_ENV = "NEMOTRON_PIPE_FINGERPRINT", "NEMOTRON_PIPE_ID"
#: override prefix that applies to every stage
ALL_STAGES = "*"


def split_stage_overrides(overrides: Sequence[str], stages: Sequence[str]) -> dict[str, list[str]]:
    """Route ``STAGE.key=value`` to ``STAGE`` (``*.key=value`` to all); anything else is an error."""
    from nemo_runspec._suggest import did_you_mean

    routed: dict[str, list[str]] = {s: [] for s in stages}
    for item in overrides:
        body = item.lstrip("+~")
        prefix, dot, rest = body.partition(".")
        if not dot or "=" in prefix:
            raise CLIUsageError(f"override {item!r} names no stage",
                                hint=f"write STAGE.key=value (stages: {', '.join(stages)}) or *.key=value")
        if prefix != ALL_STAGES and prefix not in routed:
            raise CLIUsageError(f"override {item!r}: no stage {prefix!r} in this pipeline",
                                hint=did_you_mean(prefix, stages) or f"stages: {', '.join(stages)}")
        sign = item[: len(item) - len(body)]
        for stage in (stages if prefix == ALL_STAGES else [prefix]):
            routed[stage].append(sign + rest)
    return routed


def _stage_context(gctx: GlobalContext, step: Step, overrides: Sequence[str]) -> GlobalContext:
    return dataclasses.replace(gctx, config=step.config or gctx.config,
                               overrides=[*step.overrides, *overrides], passthrough=[],
                               argv=[*gctx.argv])


def pipe_key(step: Step, job: CompiledJob, inputs: Mapping[str, str]) -> str:
    """What identifies a stage's output: the stage, its config as written (before
    ``${...}`` is resolved) and the exact versions of its inputs."""
    from omegaconf import OmegaConf

    body = {"stage": step.name, "recipe": job.runspec.name,
            "config": OmegaConf.to_container(job.train_config, resolve=False), "inputs": dict(sorted(inputs.items()))}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:20]


def made_by(producer_key: str) -> str:
    """The identity of an input a pipe stage made: its producer's pipe key. The same
    whether the producer is part of this run (its planned key) or not (the key recorded
    on the artifact it published), so a subset of stages resumes like the full pipe."""
    return f"made-by:{producer_key}"


def compile_pipeline(steps: Sequence[Step], gctx: GlobalContext, overrides: Sequence[str] = (), *,
                     resume: bool = True, pin_inputs: bool = True) -> list[StagePlan]:
    """Compile every step, build the graph and decide what to skip (see the module docstring).

    ``overrides`` are ``STAGE.key=value`` (or ``*.key=value``). With ``resume``
    false nothing is skipped. Raises a one-line error for a bad override, a
    stage consuming what a later stage publishes, or (not in a dry run) an
    input that no stage publishes and the registry does not hold.
    """
    from nemo_runspec.cmdline.recipe_config import recipe_config_from
    from nemo_runspec.errors import NemoRunspecError
    from nemo_runspec.job.compiled import compile_job

    routed = split_stage_overrides(overrides, [s.name for s in steps])
    compiled = []
    for step in steps:
        recipe = recipe_config_from(_stage_context(gctx, step, routed[step.name]), [])
        try:
            job = compile_job(step.runspec, recipe, check_artifacts=False)
            prep = step.prepare(job) if step.prepare is not None else None
            if step.check is not None:
                step.check(prep.job if prep else job, routed[step.name])
        except NemoRunspecError as exc:
            exc.args = (f"stage {step.name}: {exc.args[0] if exc.args else exc}", *exc.args[1:])
            raise
        run_job = prep.job if prep else job
        compiled.append((step, job, prep, consumed_artifacts(run_job.job_config),
                         published_artifact(run_job.job_config)))
    _check_order([(step.name, consumes, publishes) for step, _, _, consumes, publishes in compiled])
    producers: dict[str, str] = {}
    plans: list[StagePlan] = []
    for step, job, prep, consumes, publishes in compiled:
        depends = tuple(dict.fromkeys(producers[artifact_name(ref)] for ref in consumes.values()
                                      if artifact_name(ref) in producers))
        plan = _plan_stage(step, job, consumes, publishes, depends, plans, resume=resume, pin_inputs=pin_inputs)
        unneeded = step.skip_when(job) if step.skip_when is not None else None
        if unneeded:
            plan = dataclasses.replace(plan, skip=True, reason=f"skipped: {unneeded}")
        if prep is not None:  # keyed by the config as written; run, shown and submitted as prepared
            plan = dataclasses.replace(plan, job=prep.job, preparation=prep)
        plans.append(plan)
        if publishes:
            producers[publishes] = step.name
    return plans


def _plan_stage(step: Step, job: CompiledJob, consumes: Mapping[str, str], publishes: str | None,
                depends: tuple[str, ...], earlier: Sequence[StagePlan], *, resume: bool,
                pin_inputs: bool = True) -> StagePlan:
    from nemo_runspec.artifacts.pins import stage_pins

    plan = _plan_unpinned(step, job, consumes, publishes, depends, earlier, resume=resume)
    pins = stage_pins(consumes, earlier, resolve=lambda ref: _resolve(job, ref), pin_inputs=pin_inputs)
    return dataclasses.replace(plan, pins=pins) if pins else plan


def _plan_unpinned(step: Step, job: CompiledJob, consumes: Mapping[str, str], publishes: str | None,
                   depends: tuple[str, ...], earlier: Sequence[StagePlan], *, resume: bool) -> StagePlan:
    # ``job`` is the compiled job before a step's prepare hook: the key covers the
    # config as written, not what a profile fills in (W&B names, squashed image paths).
    # An input made by a stage of this pipeline is identified by that stage's key (what
    # it will publish is fixed by its own config and inputs), whether or not that stage
    # is selected: a selected producer gives its key, an artifact a pipe stage published
    # carries it in its metadata. Any other input is its exact version.
    inputs: dict[str, str] = {}
    for k, ref in consumes.items():
        producer = next((p for p in earlier if p.publishes == artifact_name(ref)), None)
        if producer is not None:
            inputs[k] = made_by(producer.key)
            continue
        art = _resolve(job, ref)
        if art is None:
            if not job.dry_run:
                raise ConfigError(f"stage {step.name}: input {ref!r} (run.{k}) is not in the registry "
                                  f"and no stage of this pipeline publishes it",
                                  key=f"run.{k}", hint="add the stage that produces it, or publish/import it first")
            inputs[k] = f"{ref} (missing)"
        else:
            made = art.metadata.get("pipe_key") if isinstance(getattr(art, "metadata", None), Mapping) else None
            inputs[k] = made_by(str(made)) if made else art.ref
    key = pipe_key(step, job, inputs)
    if not publishes:
        return StagePlan(step, job, consumes, publishes, depends, key, False, "publishes nothing: always runs")
    by_name = {p.name: p for p in earlier}
    upstream = [d for d in depends if not by_name[d].skip]
    if upstream:
        return StagePlan(step, job, consumes, publishes, depends, key, False,
                         f"runs: {', '.join(upstream)} runs first")
    existing = _resolve(job, f"{publishes}:latest")
    if resume and existing is not None and existing.metadata.get("pipe_key") == key:
        from nemo_runspec.artifacts.contents import gone_reason

        if gone := gone_reason(existing):  # same config and inputs, but its files are no longer all there
            return StagePlan(step, job, consumes, publishes, depends, key, False, f"runs: {gone}")
        return StagePlan(step, job, consumes, publishes, depends, key, True,
                         f"skipped: {existing.ref} was made from the same config and inputs", output=existing.ref)
    if not resume:
        return StagePlan(step, job, consumes, publishes, depends, key, False, "runs: --no-resume")
    why = "runs: no output yet" if existing is None else f"runs: {existing.ref} came from another config or inputs"
    return StagePlan(step, job, consumes, publishes, depends, key, False, why)


def _resolve(job: CompiledJob, ref: str) -> Any:
    from nemo_runspec.errors import NemoRunspecError

    try:
        return job.registry.resolve(ref)
    except (NemoRunspecError, OSError, KeyError, ValueError):
        return None


def _check_order(stages: Sequence[tuple[str, Mapping[str, str], str | None]]) -> None:
    published_at = {publishes: i for i, (_, _, publishes) in enumerate(stages) if publishes}
    for i, (name, consumes, _) in enumerate(stages):
        for ref in consumes.values():
            at = published_at.get(artifact_name(ref))
            if at is not None and at > i:
                raise ConfigError(f"stage {name} consumes {artifact_name(ref)}, which the later stage "
                                  f"{stages[at][0]} publishes", hint="reorder the steps")


def graph_lines(plans: Sequence[StagePlan], job_ids: Mapping[str, str] | None = None) -> list[str]:
    """The dependency graph, one line per stage: ``pretrain <- prep-pretrain  (runs: ...)``."""
    lines = []
    for p in plans:
        ident = f" [{job_ids[p.name]}]" if job_ids and p.name in job_ids else ""
        after = f" <- {', '.join(p.depends_on)}" if p.depends_on else ""
        out = f" -> {p.publishes}" if p.publishes else ""
        lines.append(f"{p.name}{ident}{after}{out}  ({p.reason})")
    return lines


def stage_env(plan: StagePlan, pipe_id: str) -> dict[str, str]:
    """Variables a stage's job gets so what it publishes carries its pipe key, and its
    inputs are the versions this pipe pinned (:mod:`nemo_runspec.artifacts.pins`)."""
    from nemo_runspec.artifacts.pins import PINS_ENV, for_pipe

    pins = {PINS_ENV: json.dumps(for_pipe(plan.pins, pipe_id), sort_keys=True)} if plan.pins else {}
    return {PIPE_ID_ENV: pipe_id, PIPE_KEY_ENV: plan.key, **pins}


def new_pipe_id(title: str) -> str:
    """``<title>-<UTC time>-<4 hex>``: sortable and unique."""
    return f"{title}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{os.urandom(2).hex()}"


# ----------------------------------------------------------------------------------- local


def run_local(plans: Sequence[StagePlan], *, pipe_id: str | None = None,
              out: Callable[[str], None] | None = None) -> int:
    """Run the stages here, in order; return the first failing stage's exit code (0 when all pass).

    A stage's inputs are resolved when it starts, from what the stages before it
    published. Skipped stages are reported, not run.
    """
    from nemo_runspec.execution.local import run_local as run_job_here

    say = out or (lambda msg: print(msg, file=sys.stderr, flush=True))
    pipe_id = pipe_id or new_pipe_id(_title(plans))
    for i, plan in enumerate(plans, 1):
        if plan.skip:
            say(f"[pipe {i}/{len(plans)}] {plan.name}: {plan.reason}")
            continue
        say(f"[pipe {i}/{len(plans)}] {plan.name}: running {plan.job.runspec.name} ({plan.reason})")
        started = time.monotonic()
        code = run_job_here(plan.job, extra_env=stage_env(plan, pipe_id))
        if code != 0:
            rest = [p.name for p in plans[i:]]
            say(f"[pipe] {plan.name} failed (exit {code}) after {time.monotonic() - started:.1f}s"
                + (f"; not run: {', '.join(rest)}" if rest else ""))
            return code
        say(f"[pipe {i}/{len(plans)}] {plan.name}: done in {time.monotonic() - started:.1f}s")
    return 0


# ----------------------------------------------------------------------------------- Slurm


def prepare_stage(plan: StagePlan, pipe_id: str, *, skipped: set[str],
                  build_packager: Callable[[CompiledJob], tuple[Any, Any]],
                  job_ids: Mapping[str, str] | None = None, waits_for: Sequence[str] = ()) -> PreparedJob:
    """One running stage as a :class:`PreparedJob` whose executor waits for its
    producers that run (``skipped`` ones are done already) and for ``waits_for``
    (job ids its :class:`~nemo_runspec.pipeline.step.Preparation` submitted first).

    ``job_ids`` maps a producer stage to its Slurm job id; a missing one (a dry
    run) renders as the placeholder ``<STAGE>`` so the script shows the shape of
    the dependency line.
    """
    from nemo_runspec import slurm

    ids = [(job_ids or {}).get(d) or f"<{d}>" for d in plan.depends_on if d not in skipped]
    ids += [i for i in waits_for if i not in ids]
    job = slurm.prepare_job(plan.job, *build_packager(plan.job), env_vars=stage_env(plan, pipe_id),
                            dependencies=ids or None)
    if ids:
        params = dict(job.executor.additional_parameters or {})
        params["kill_on_invalid_dep"] = "yes"  # a failed producer cancels this job
        job.executor.additional_parameters = params
    return job


def prepare_stages(plans: Sequence[StagePlan], pipe_id: str, *,
                   build_packager: Callable[[CompiledJob], tuple[Any, Any]],
                   job_ids: Mapping[str, str] | None = None) -> dict[str, PreparedJob]:
    """Every running stage of ``plans`` (:func:`prepare_stage`), by name."""
    skipped = {p.name for p in plans if p.skip}
    return {p.name: prepare_stage(p, pipe_id, skipped=skipped, build_packager=build_packager, job_ids=job_ids)
            for p in plans if not p.skip}


def submit_slurm(plans: Sequence[StagePlan], *, build_packager: Callable[[CompiledJob], tuple[Any, Any]],
                 pipe_id: str | None = None, out: Callable[[str], None] | None = None) -> PipeSubmission:
    """Submit every running stage at once as an ``afterok`` chain; record the pipe.

    Each stage is packaged and submitted once its producers have job ids. When a
    submission fails half-way, the stages already queued are cancelled, so no
    part of a chain is left waiting on a stage that was never submitted.
    """
    from nemo_runspec.runtime import lifeline
    from nemo_runspec.slurm.submission import submit_detached

    say = out or (lambda msg: print(msg, file=sys.stderr, flush=True))
    pipe_id = pipe_id or new_pipe_id(_title(plans))
    result = PipeSubmission(pipe_id, list(plans))
    skipped = {p.name for p in plans if p.skip}
    try:
        for i, plan in enumerate(plans, 1):
            if plan.skip:
                say(f"[pipe {i}/{len(plans)}] {plan.name}: {plan.reason}")
                continue
            waits_for = before_submit(plan)
            prepared = prepare_stage(plan, pipe_id, skipped=skipped, build_packager=build_packager,
                                     job_ids=result.job_ids, waits_for=waits_for)
            after = [result.job_ids[d] for d in plan.depends_on if d in result.job_ids] + waits_for
            say(f"[pipe {i}/{len(plans)}] {plan.name}: submitting" + (f" after {', '.join(after)}" if after else "")
                + f" ({plan.reason})")
            result.jobs[plan.name] = submit_detached(prepared, announce=False)  # its fate is the chain's
            if prepared.tunnel_kind == "local":  # SIGKILL before the chain is whole cancels it
                lifeline.cancel_if_killed(result.jobs[plan.name].job_id)
            _ledger(result.jobs[plan.name], pipe_id)
            say(f"[pipe {i}/{len(plans)}] {plan.name}: job {result.jobs[plan.name].job_id}")
    except BaseException as exc:
        accepted = getattr(exc, "accepted_job_id", None)  # interrupted right after sbatch answered
        if accepted and plan.name not in result.jobs:
            from nemo_runspec.slurm.prepared import SubmittedJob

            result.jobs[plan.name] = SubmittedJob(job_id=accepted, job_dir=prepared.job_dir, name=prepared.name,
                                                  prepared=prepared, log_path="", sbatch_log_path="",
                                                  sbatch_path=prepared.sbatch_path)
        if result.jobs:
            why = "the pipeline's submission was interrupted" if isinstance(exc, KeyboardInterrupt) \
                else "the pipeline's submission failed"
            if not cancel_jobs(result, reason=why):  # what stays queued, on stdout as after a --batch
                result.record_path = write_record(result)
                print(json.dumps(chain_record(result)), flush=True)
                print(f"[pipe] {pipe_id}: {', '.join(f'{n}={i}' for n, i in result.job_ids.items())} may stay "
                      f"queued: nemotron jobs logs -f {pipe_id} follows them, nemotron jobs cancel {pipe_id} "
                      "cancels them", file=sys.stderr, flush=True)
        raise
    finally:
        if result.jobs:
            result.record_path = write_record(result)
        for sub in result.jobs.values():  # whole, or cancelled: nothing for the watcher to do
            lifeline.keep_job(sub.job_id)
    return result


def before_submit(plan: StagePlan) -> list[str]:
    """Submit what a running stage needs first (its preparation's ``before_submit``, e.g.
    image imports); the job ids it must wait for. ``[]`` for a dry run."""
    prep = plan.preparation
    if plan.skip or plan.job.dry_run or prep is None or prep.before_submit is None:
        return []
    return [str(i) for i in prep.before_submit()]


def _title(plans: Sequence[StagePlan]) -> str:
    from nemo_runspec.job.settings import job_slug

    first = plans[0].job.runspec.name.split("/")[0] if plans else "pipe"
    return job_slug(f"{first}-pipe")


def _ledger(sub: SubmittedJob, pipe_id: str) -> None:
    """Add the stage to the submissions index (``nemotron jobs``) when that module is there."""
    try:
        from nemo_runspec.slurm.ledger import record_submission
    except ImportError:
        return
    record_submission(sub, pipe=pipe_id)


def cancel_jobs(sub: PipeSubmission, *, reason: str) -> bool:
    """``scancel`` every job of ``sub`` (best effort; says what it did). False when
    ``scancel`` failed: the jobs may still be queued (the command to cancel them is printed)."""
    from nemo_runspec.slurm.jobs import scancel
    from nemo_runspec.slurm.remote import Remote, remove_secrets

    ids = [s.job_id for s in sub.jobs.values()]
    if not ids:
        return True
    first = next(iter(sub.jobs.values()))
    try:
        scancel(Remote(first.prepared), ids)
    except Exception as exc:  # noqa: BLE001 - cancelling is best effort; say what is left
        print(f"[pipe] {' '.join(str(exc).split())}; cancel them with: scancel {' '.join(ids)}", file=sys.stderr)
        return False
    for job in sub.jobs.values():  # a job cancelled before it started never deleted its secrets file
        if job.prepared is not None:
            remove_secrets(job.prepared)
    print(f"[pipe] cancelled {', '.join(ids)}: {reason}", file=sys.stderr)
    return True


def follow_submission(sub: PipeSubmission, *, console: Any = None, poll: float = 2.0, out: Any = None) -> int:
    """Follow the stages one after another (queue state, live log); return the first failing
    stage's exit code, after cancelling the stages after it that are still queued."""
    from nemo_runspec.slurm.monitor import follow
    from nemo_runspec.slurm.prepared import CANCELLED_EXIT

    names = [p.name for p in sub.plans if p.name in sub.jobs]
    for i, name in enumerate(names):
        job = sub.jobs[name]
        print(f"[pipe] following {name} (job {job.job_id})", file=sys.stderr, flush=True)
        follow(job, console=console, poll=poll, out=out)
        code = job.returncode
        if job.interrupted and code != CANCELLED_EXIT:  # detached (Ctrl-C, SIGTERM, SIGHUP): the chain runs on
            print(f"[pipe] stopped following pipe {sub.pipe_id}; its stages stay in Slurm "
                  f"({', '.join(f'{n}={sub.jobs[n].job_id}' for n in names[i:])}): nemotron jobs logs -f "
                  f"{sub.pipe_id} follows them, nemotron jobs cancel {sub.pipe_id} cancels them", file=sys.stderr)
            return code
        if code != 0:
            rest = PipeSubmission(sub.pipe_id, sub.plans, {n: sub.jobs[n] for n in names[i + 1:]})
            cancel_jobs(rest, reason=f"stage {name} failed (exit {code})")
            return code
    return 0
