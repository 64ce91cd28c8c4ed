"""The nano3 chain as data: its stages in order (:data:`STEPS`), each with the hooks that
check its config and prepare its job, and :data:`PIPELINES` for ``nemotron steps``.

A module of its own, not the ``nemotron nano3 pipe`` command file: the table is what a
recipe family defines (a new family adds its own module here), the command file only
wires it to the command line and the FORK POINT (docs/dev/architecture.md). Importing it
stays cheap (``--help``): each hook imports what it checks with when it runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from nemo_runspec.pipeline.step import Step
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
    """The evaluation stage made ready exactly as ``nano3 eval`` makes it
    (:func:`nemotron.training.evaluate.prepare_eval`)."""
    from nemotron.training.evaluate import prepare_eval

    return prepare_eval(job)


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
