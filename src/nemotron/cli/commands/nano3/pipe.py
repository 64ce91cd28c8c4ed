"""`nemotron nano3 pipe`: the nano3 chain, data prep to evaluation, as one command.

The steps are listed here (:data:`STEPS`); the flow reads like a recipe
command's: compile every stage (config + per-stage overrides + profile), then
run them here one after another, show them (``--dry-run``: every stage's exact
script and the graph), or submit them all at once to Slurm as an ``afterok``
chain through nemo-run. See docs/pipelines.md.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import typer

from nemo_runspec.step import Step
from nemotron.recipes import RECIPES_DIR

NANO3 = RECIPES_DIR / "nano3"


def _check_data_prep(stage: str):  # noqa: ANN202 - a Step.check
    def check(job, overrides: Sequence[str]) -> None:  # noqa: ANN001
        from nemotron.data_prep.validation import check_config  # pydantic: not at --help time

        check_config(job.train_config, stage, overrides=list(overrides))
    return check


def _check_recipe(kind: str):  # noqa: ANN202 - a Step.check
    def check(job, overrides: Sequence[str]) -> None:  # noqa: ANN001
        from nemotron.training.schema import check_config  # pydantic: not at --help time

        check_config(job.train_config, kind, overrides=list(overrides))
    return check


def _prepare_eval(job):  # noqa: ANN001, ANN202 - a Step.prepare
    """The evaluation stage made ready exactly as ``nano3 eval`` makes it: task selection,
    env.toml ``[wandb]`` into the evaluator config (and the W&B key through the secrets
    path), the evaluator images' ``.sqsh`` imports, submitted before the stage."""
    from nemo_runspec import evaluator
    from nemo_runspec.step import Preparation

    ev = evaluator.prepare_eval_job(job)

    def show(console) -> None:  # noqa: ANN001 - a rich Console
        from nemotron.training.evaluate import show_plan

        show_plan(ev, console=console)

    return Preparation(ev.job, show=show, before_submit=lambda: evaluator.submit_image_squashes(ev))


def _prepare_native(job):  # noqa: ANN001, ANN202 - a Step.prepare
    """A training stage as it is; its dry run adds what the image's libraries are called with
    (:mod:`nemotron.training.native_plan`, as the stage's own command shows it)."""
    from nemotron.training.native_plan import prepare_native

    return prepare_native(job)


def _convert_not_needed(job):  # noqa: ANN001, ANN202 - a Step.skip_when
    """Why the convert stage has nothing to do under this config (its formats match), or None."""
    from omegaconf import OmegaConf

    from nemotron.training.convert import nothing_to_convert

    return nothing_to_convert(OmegaConf.to_container(job.train_config, resolve=False))


#: The nano3 chain, in order. Each stage consumes what an earlier one publishes
#: (``run.data``/``run.model`` in its config); the graph follows from the configs.
STEPS: list[Step] = [
    Step("prep-pretrain", NANO3 / "stage0_pretrain/data_prep.py", check=_check_data_prep("pretrain"),
         description="tokenize the pretraining corpus (Ray)"),
    Step("pretrain", NANO3 / "stage0_pretrain/train.py", check=_check_recipe("pretrain"),
         description="pretrain (Megatron-Bridge; CPU fallback)", prepare=_prepare_native),
    Step("prep-sft", NANO3 / "stage1_sft/data_prep.py", check=_check_data_prep("sft"),
         description="chat-template and pack the SFT data (Ray)"),
    Step("sft", NANO3 / "stage1_sft/train.py", check=_check_recipe("sft"),
         description="supervised fine-tuning (Megatron-Bridge; CPU fallback)", prepare=_prepare_native),
    Step("convert", NANO3 / "stage1_sft/convert.py", prepare=_prepare_native, skip_when=_convert_not_needed,
         description="export the SFT checkpoint to Hugging Face for RL (Megatron-Bridge; skipped in the CPU chain)"),
    Step("prep-rl", NANO3 / "stage2_rl/data_prep.py", check=_check_data_prep("rl"),
         description="normalise and split the RL prompts (Ray)"),
    Step("rl", NANO3 / "stage2_rl/train.py", check=_check_recipe("rl"),
         description="GRPO (NeMo-RL; CPU smoke fallback)", prepare=_prepare_native),
]
if (NANO3 / "eval/eval.py").is_file():
    STEPS.append(Step("eval", NANO3 / "eval/eval.py", description="evaluate the final model",
                      check=_check_recipe("eval"), prepare=_prepare_eval))

#: Every registered pipeline's steps, for `nemotron steps`.
PIPELINES: dict[str, list[Step]] = {"nano3": STEPS}


def pipe(
    ctx: typer.Context,
    stages: str = typer.Option(None, "--stages", "-s", metavar="LIST",
                               help="Stages to run: names and ranges, e.g. 'pretrain,sft' or 'prep-sft:rl'"),
    no_resume: bool = typer.Option(False, "--no-resume", help="Run every stage, even those whose output exists"),
    launcher: str = typer.Option("nemo-run", "--launcher", "-l", metavar="NAME",
                                 help="On Slurm: nemo-run (a job per stage, an afterok chain) or sbatch "
                                      "(every stage in one allocation, in order, no queueing between them)"),
    no_pin: bool = typer.Option(False, "--no-pin",
                                help="Inputs from outside the pipe resolve when each stage starts (:latest then "
                                     "means latest at that moment), not when the pipe starts; what the pipe's "
                                     "own stages publish is always used as published"),
) -> None:
    """Run the nano3 chain: data prep, pretrain, SFT, convert, RL and evaluation.

    Overrides name their stage: pretrain.train.train_iters=5, *.run.env.nodes=2.
    A stage whose output artifact was made from the same config and inputs is
    skipped, so a rerun resumes after a failure (--no-resume runs everything).

    Examples:
        nemotron nano3 pipe -c tiny
        nemotron nano3 pipe -c tiny --stages pretrain:sft --dry-run
        nemotron nano3 pipe -c tiny --batch dev pretrain.fallback.max_steps=20
        nemotron nano3 pipe -c tiny --run dev --launcher sbatch
    """
    from nemo_runspec import pipeline
    from nemo_runspec.cli.recipe_config import parse_recipe_config

    raise typer.Exit(run_steps(pipeline.select_stages(STEPS, stages), parse_recipe_config(ctx),
                               resume=not no_resume, launcher=launcher, pin_inputs=not no_pin))


LAUNCHERS = ("nemo-run", "sbatch")


def run_steps(steps: Sequence[Step], recipe, *, resume: bool = True,  # noqa: ANN001 - a RecipeConfig
              launcher: str = "nemo-run", pin_inputs: bool = True) -> int:
    """Compile ``steps`` from the command line ``recipe``, then show, run here, or submit them
    to Slurm as one chain, or as one allocation with ``launcher="sbatch"`` (following
    it when attached); returns the exit code."""
    from nemo_runspec import packaging, pipeline
    from nemo_runspec._suggest import did_you_mean
    from nemo_runspec.cli.display import show_pipeline
    from nemo_runspec.errors import CLIUsageError, ConfigError

    if launcher not in LAUNCHERS:
        raise CLIUsageError(f"--launcher {launcher!r} is not a pipeline launcher",
                            hint=did_you_mean(launcher, LAUNCHERS) or f"choose one of {', '.join(LAUNCHERS)}")
    if recipe.passthrough:
        raise typer.BadParameter(f"unexpected arguments {' '.join(recipe.passthrough)} (overrides are STAGE.key=value)")
    plans = pipeline.compile_pipeline(steps, recipe.ctx, recipe.overrides, resume=resume, pin_inputs=pin_inputs)
    from nemo_runspec.backends import backend_for

    first = plans[0].job
    if not backend_for(first).chains:  # here in order, or Slurm's afterok chain; not docker, ...
        raise ConfigError(f"a pipeline runs its stages here or on Slurm; executor = {first.executor!r} is not "
                          "supported", key="executor", hint="run the stages one by one with their own commands")
    one_allocation = launcher == "sbatch"
    if one_allocation and plans[0].job.is_local:
        raise CLIUsageError("--launcher sbatch runs the stages in one Slurm allocation: it needs a Slurm profile",
                            hint="add --run PROFILE or --batch PROFILE; without a profile the stages run here in order")
    if any(p.job.dry_run for p in plans):  # -d, or dry_run = true in the profile
        if one_allocation:
            from nemo_runspec.pipeline_sbatch import prepare_allocation

            if all(p.skip for p in plans):
                return show_pipeline(plans, {})
            alloc = prepare_allocation(plans, "<pipe id>", build_packager=packaging.build_packager)
            return show_pipeline(plans, alloc.prepared, driver=alloc.driver)
        is_slurm = not plans[0].job.is_local
        prepared = pipeline.prepare_stages(plans, "<pipe id>", build_packager=packaging.build_packager) \
            if is_slurm else {}
        return show_pipeline(plans, prepared)
    if plans[0].job.is_local:
        return pipeline.run_local(plans)
    attached = all(p.job.attached for p in plans)  # --run, unless the profile says detach = true
    if all(p.skip for p in plans):
        for line in pipeline.graph_lines(plans):
            typer.echo(line, err=True)
        typer.echo("nothing to submit: every stage's output was made from the same config and inputs "
                   "(--no-resume runs them again)", err=True)
        if not attached:  # --batch: stdout is always the chain's one JSON line
            print(json.dumps(pipeline.chain_record(pipeline.PipeSubmission("", list(plans)))), flush=True)
        return 0
    # FORK POINT: every stage goes to Slurm through nemo-run as one afterok chain,
    # or (--launcher sbatch) into one allocation that runs them in order.
    if one_allocation:
        from nemo_runspec.pipeline_sbatch import follow_allocation, submit_allocation

        sub = submit_allocation(plans, build_packager=packaging.build_packager)
    else:
        sub = pipeline.submit_slurm(plans, build_packager=packaging.build_packager)
    # stdout is for scripts: --run streams the stages' logs there, --batch prints one JSON line
    try:
        typer.echo(f"pipe {sub.pipe_id}: " + ", ".join(f"{n}={i}" for n, i in sub.job_ids.items()), err=True)
        if attached:
            return follow_allocation(sub) if one_allocation else pipeline.follow_submission(sub)
        typer.echo(f"follow it with: nemotron jobs logs -f {sub.pipe_id}   (state: nemotron jobs status "
                   f"{sub.pipe_id}, cancel: nemotron jobs cancel {sub.pipe_id})", err=True)
    except KeyboardInterrupt:  # the whole chain is in Slurm: never leave without saying how to reach it
        if not attached:  # (the follower of --run says it stopped following, and how to go on)
            typer.echo(f"interrupted after every stage was submitted: pipe {sub.pipe_id} stays in Slurm; "
                       f"nemotron jobs logs -f {sub.pipe_id} follows it, nemotron jobs cancel {sub.pipe_id} "
                       "cancels it", err=True)
            print(json.dumps(pipeline.chain_record(sub)), flush=True)
        raise
    print(json.dumps(pipeline.chain_record(sub)), flush=True)
    return 0
