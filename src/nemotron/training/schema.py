"""The typed sections of the training and evaluation recipe configs.

What a recipe script reads is typed here, once: the CPU fallback's ``fallback:``
section (every key the loop and the tasks read), the keys our Megatron-Bridge
path sets on its ``ConfigContainer`` (:data:`nemotron.training.megatron_bridge.FIELDS`:
``train``, ``optimizer``, ``scheduler``, ``checkpoint``, ``logger``, ``model``,
``data``), the NeMo-RL keys the tiny and default RL configs set (``grpo``,
``policy``, ``checkpointing``), the evaluation recipe's ``fallback:``,
``evaluation.tasks`` and ``tasks``, and ``publish:``. Validation is strict
(``max_steps: 2.5``, ``lr: abc`` and ``max_steps: "5"`` are errors, not 2, a
crash or 5); the native backends' other keys are theirs and pass through.

:func:`check_config` runs in the CLI right after a job is compiled (local run,
``--dry-run`` and submission alike, ``${...}`` values left for the node), and
again in the job (:func:`fallback_settings` for the section the loop reads), so
a bad value is one line naming the key, the value and the expected type, exit
2, before anything runs or is submitted. Imports pydantic: import this module
only where a config is checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from nemo_runspec.config.typed import check_model, plain
from nemo_runspec.errors import ConfigError

Positive = Annotated[int, Field(ge=1)]
Count = Annotated[int, Field(ge=0)]
Rate = Annotated[float, Field(ge=0)]


class _Typed(BaseModel):
    """Known keys typed strictly; the others belong to the backend and pass through."""

    model_config = ConfigDict(extra="allow", strict=True)


class _Own(BaseModel):
    """A section of our own: every key known, a typo is an error with "did you mean"."""

    model_config = ConfigDict(extra="forbid", strict=True)


# --------------------------------------------------------------------------- the CPU fallback

class FallbackShape(_Own):
    """``fallback.model``: the tiny GPT's shape."""

    n_layer: Positive = Field(2, examples=[2])
    n_head: Positive = Field(2, examples=[2])
    d_model: Positive = Field(64, examples=[64])
    dropout: Annotated[float, Field(ge=0, lt=1)] = Field(0.0, examples=[0.1])

    @model_validator(mode="after")
    def _heads_divide_width(self) -> FallbackShape:
        if self.d_model % self.n_head:
            raise ValueError(f"d_model ({self.d_model}) must be a multiple of n_head ({self.n_head}): "
                             "each attention head gets d_model / n_head dimensions")
        return self


class FallbackSettings(_Own):
    """``fallback:`` of the pretrain, SFT and RL configs (docs/training.md)."""

    enabled: bool | Literal["auto"] = Field("auto", examples=[True])
    max_steps: Positive = Field(30, examples=[30])
    micro_batch_size: Positive = Field(4, examples=[8])
    seq_length: Annotated[int, Field(ge=2)] | None = Field(64, examples=[64])
    lr: Annotated[float, Field(gt=0)] = Field(3e-3, examples=[0.003])
    min_lr: Rate = Field(3e-4, examples=[0.0003])
    weight_decay: Rate = Field(0.01, examples=[0.01])
    warmup_steps: Count = Field(3, examples=[3])
    clip_grad: Rate = Field(1.0, examples=[1.0])
    log_interval: Positive = Field(5, examples=[5])
    eval_interval: Count = Field(0, examples=[10])
    eval_batches: Count = Field(2, examples=[2])
    save_interval: Count = Field(0, examples=[10])
    keep_checkpoints: Positive = Field(2, examples=[2])
    seed: int = Field(1234, examples=[1234])
    device: Literal["auto", "cpu", "cuda"] = Field("auto", examples=["cpu"])
    model: FallbackShape = Field(default_factory=FallbackShape)
    checkpoint_dir: str | None = Field(None, examples=["checkpoints"])
    init_from_pretrained: bool = Field(True, examples=[False])
    threads: Positive | None = Field(None, examples=[1])  # intra-op threads per process; None: cores / processes
    # the RL smoke task's own keys
    tokenizer: str | None = Field(None, examples=["pkg:nemotron/recipes/nano3/sample_data/tokenizer"])
    max_new_tokens: Positive = Field(16, examples=[8])
    eval_samples: Positive = Field(32, examples=[16])


# --------------------------------------------------------------------------- Megatron-Bridge

class TrainSection(_Typed):
    train_iters: Positive = Field(None, examples=[100])  # type: ignore[assignment]
    global_batch_size: Positive = Field(None, examples=[8])  # type: ignore[assignment]
    micro_batch_size: Positive = Field(None, examples=[1])  # type: ignore[assignment]
    eval_interval: Positive | None = Field(None, examples=[10])
    eval_iters: Count = Field(None, examples=[2])  # type: ignore[assignment]


class OptimizerSection(_Typed):
    optimizer: str = Field(None, examples=["adam"])  # type: ignore[assignment]
    lr: Rate = Field(None, examples=[0.0016])  # type: ignore[assignment]
    min_lr: Rate = Field(None, examples=[1.6e-05])  # type: ignore[assignment]
    weight_decay: Rate = Field(None, examples=[0.1])  # type: ignore[assignment]
    adam_beta1: Annotated[float, Field(ge=0, lt=1)] = Field(None, examples=[0.9])  # type: ignore[assignment]
    adam_beta2: Annotated[float, Field(ge=0, lt=1)] = Field(None, examples=[0.95])  # type: ignore[assignment]
    clip_grad: Rate = Field(None, examples=[1.0])  # type: ignore[assignment]
    bf16: bool = Field(None, examples=[True])  # type: ignore[assignment]


class SchedulerSection(_Typed):
    lr_decay_style: str = Field(None, examples=["cosine"])  # type: ignore[assignment]
    lr_warmup_iters: Count = Field(None, examples=[2000])  # type: ignore[assignment]


class CheckpointSection(_Typed):
    save: str | None = Field(None, examples=["checkpoints"])
    save_interval: Positive | None = Field(None, examples=[1000])
    load: str | None = Field(None, examples=["/lustre/ckpt"])
    pretrained_checkpoint: str | None = Field(None, examples=["${art:model,path}"])


class LoggerSection(_Typed):
    log_interval: Positive = Field(None, examples=[10])  # type: ignore[assignment]
    wandb_project: str | None = Field(None, examples=["nano3"])
    wandb_exp_name: str | None = Field(None, examples=["nano3-pretrain"])
    wandb_entity: str | None = Field(None, examples=["my-team"])
    wandb_save_dir: str | None = Field(None, examples=["wandb"])


class ModelSection(_Typed):
    provider: str = Field(None, examples=["nemotron_3_nano"])  # type: ignore[assignment]
    tensor_model_parallel_size: Positive = Field(None, examples=[1])  # type: ignore[assignment]
    pipeline_model_parallel_size: Positive = Field(None, examples=[1])  # type: ignore[assignment]
    expert_model_parallel_size: Positive = Field(None, examples=[8])  # type: ignore[assignment]
    sequence_parallel: bool = Field(None, examples=[False])  # type: ignore[assignment]
    seq_length: Positive = Field(None, examples=[8192])  # type: ignore[assignment]


class DataSection(_Typed):
    data_path: str | list[str] | None = Field(None, examples=["${art:data,path}"])
    seq_length: Positive = Field(None, examples=[8192])  # type: ignore[assignment]
    num_workers: Count = Field(None, examples=[4])  # type: ignore[assignment]
    split: str = Field(None, examples=["99990,8,2"])  # type: ignore[assignment]


# --------------------------------------------------------------------------- NeMo-RL

class GrpoSection(_Typed):
    num_prompts_per_step: Positive = Field(None, examples=[2])  # type: ignore[assignment]
    num_generations_per_prompt: Positive = Field(None, examples=[2])  # type: ignore[assignment]
    max_num_steps: Positive = Field(None, examples=[3])  # type: ignore[assignment]
    val_period: Count = Field(None, examples=[2])  # type: ignore[assignment]


class GenerationSection(_Typed):
    max_new_tokens: Positive = Field(None, examples=[64])  # type: ignore[assignment]


class PolicySection(_Typed):
    train_global_batch_size: Positive = Field(None, examples=[4])  # type: ignore[assignment]
    max_total_sequence_length: Positive = Field(None, examples=[512])  # type: ignore[assignment]
    generation: GenerationSection = Field(None)  # type: ignore[assignment]


class CheckpointingSection(_Typed):
    checkpoint_dir: str | None = Field(None, examples=["checkpoints"])


# --------------------------------------------------------------------------- whole configs

def _publish() -> Any:
    from nemotron.data_prep.schema import Publish  # the same publish: section as data prep's

    return Publish


class TrainingConfig(_Typed):
    """A pretrain, SFT or RL config: the sections the recipe script reads."""

    backend: Literal["auto", "native", "torch"] = Field("auto", examples=["torch"])
    fallback: FallbackSettings | None = None
    train: TrainSection | None = None
    optimizer: OptimizerSection | None = None
    scheduler: SchedulerSection | None = None
    checkpoint: CheckpointSection | None = None
    logger: LoggerSection | None = None
    model: ModelSection | None = None
    data: DataSection | None = None
    grpo: GrpoSection | None = None
    policy: PolicySection | None = None
    checkpointing: CheckpointingSection | None = None
    publish: _publish() | None = None  # type: ignore[valid-type]


class EvalFallback(_Own):
    """``fallback:`` of the evaluation config (the CPU evaluation of a tiny model)."""

    enabled: bool | Literal["auto"] = Field("auto", examples=[True])
    data_path: str | None = Field(None, examples=["${art:data,path}"])
    task_data_path: str | None = Field(None, examples=["${art:task_data,path}"])
    tokenizer: str | None = Field(None, examples=["pkg:nemotron/recipes/nano3/sample_data/tokenizer"])
    device: Literal["auto", "cpu", "cuda"] = Field("auto", examples=["cpu"])
    batch_size: Positive = Field(16, examples=[16])
    threads: Positive | None = Field(None, examples=[1])
    chain: bool = Field(True, examples=[False])  # also evaluate the models this one was trained from


class EvalTask(_Typed):
    """One entry of ``evaluation.tasks`` (the evaluator's own keys pass through)."""

    name: str = Field(examples=["heldout_perplexity"])
    split: str | None = Field(None, examples=["test"])
    max_new_tokens: Positive | None = Field(None, examples=[8])
    samples: Positive | None = Field(None, examples=[16])


class EvaluationSection(_Typed):
    tasks: list[EvalTask] | None = None


class EvalConfig(_Typed):
    """The evaluation config: our keys typed, the launcher's own pass through."""

    backend: Literal["auto", "native", "torch"] = Field("auto", examples=["torch"])
    fallback: EvalFallback | None = None
    evaluation: EvaluationSection | None = None
    tasks: list[str] | str | None = Field(None, examples=[["mmlu"]])
    launcher_defaults: dict[str, str] | None = None
    publish: _publish() | None = None  # type: ignore[valid-type]


MODELS: dict[str, type[BaseModel]] = {
    "pretrain": TrainingConfig, "sft": TrainingConfig, "rl": TrainingConfig, "eval": EvalConfig,
}


def check_config(cfg: Any, kind: str, *, overrides: Sequence[str] = (), files: Sequence[Any] | None = None) -> None:
    """Check the unresolved config ``cfg`` of recipe ``kind`` (``pretrain``, ``sft``,
    ``rl``, ``eval``); the first problem is one :class:`ConfigError` line naming the
    override that set it, else the file and line. ``${...}`` values pass (they resolve
    in the job, where :func:`fallback_settings` checks the resolved section)."""
    data, files = _data(cfg, files)
    data.pop("run", None)  # the launcher's (checked when the job is compiled)
    check_model(data, MODELS[kind], files=files, overrides=overrides, allow_interpolations=True)


def fallback_settings(section: Any, *, kind: str = "pretrain") -> FallbackSettings | EvalFallback:
    """The resolved ``fallback:`` section, validated (in the job, before training starts)."""
    model = EvalFallback if kind == "eval" else FallbackSettings
    return check_model(plain(section or {}), model, prefix="fallback")


def _data(cfg: Any, files: Sequence[Any] | None) -> tuple[dict[str, Any], Sequence[Any]]:
    from omegaconf import DictConfig, OmegaConf

    if isinstance(cfg, DictConfig):
        if files is None:
            from nemo_runspec.config.loader import config_info

            info = config_info(cfg)
            files = info.files if info is not None else ()
        data = OmegaConf.to_container(cfg, resolve=False)
    else:
        data = plain(cfg)
    if not isinstance(data, dict):
        raise ConfigError(f"a recipe config must be a mapping, not a {type(data).__name__}")
    return data, files or ()
