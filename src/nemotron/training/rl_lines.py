"""What our GRPO entry calls in each NeMo-RL release line.

NeMo-RL changed its GRPO entry between the releases the RL images of
:data:`nemotron.training.versions.TABLE` carry. An :class:`RLLine` is a range of
versions with one flow; :func:`line_for` picks it from the installed version and
:mod:`nemotron.training.nemo_rl` follows it. The names and arities are checked
against each release's source (``tests/nemotron/training/data/nemo_rl-*.json``,
written by ``scripts/nemo_rl_api.py``; ``tests/nemotron/training/test_nemo_rl.py``).

What differs, read from the tags:

- 0.4.0 - 0.5.x (``examples/run_grpo_math.py``; the nano-v3 branch in
  ``nemo-rl:v0.4.0.nemotron_3_nano`` reports 0.5.0rc0, and so does the v0.5.0 tag):
  a flat ``data`` section (``train_data_path``, ``val_data_path``, ``input_key``,
  ...), datasets and the math environment built by the caller
  (``load_response_dataset(data, seed)``, ``AllTaskProcessedDataset``,
  ``MathEnvironment``), ``setup`` returns ten values.
- 0.6.x (``examples/run_grpo.py``; ``run_grpo_math.py`` is gone): ``data.train`` /
  ``data.validation`` / ``data.default`` dataset entries (``data_path``), datasets and
  environments from ``setup_response_data(tokenizer, data, env)``,
  ``configure_generation_config(..., has_refit_draft_weights=)``, ``grpo_train``'s
  third parameter is ``wrapped_dataloader`` and ``processor`` is gone.
- 0.7.x: ``MasterConfig`` is a pydantic model built with ``MasterConfig(**config)``;
  ``setup`` returns thirteen values (a NeMo-Gym actor after the generation, teacher
  worker groups and their aliases at the end) and takes ``policy_factory``;
  ``configure_generation_config(..., trains_mtp=)``; ``async_grpo_train`` takes the
  teacher groups.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .release import in_range, range_text

#: names every line uses
COMMON: dict[str, str] = {
    "load_config": "nemo_rl.utils.config.load_config",
    "get_next_experiment_dir": "nemo_rl.utils.logger.get_next_experiment_dir",
    "init_ray": "nemo_rl.distributed.virtual_cluster.init_ray",
    "get_tokenizer": "nemo_rl.algorithms.utils.get_tokenizer",
    "configure_generation_config": "nemo_rl.models.generation.configure_generation_config",
    "setup": "nemo_rl.algorithms.grpo.setup",
    "grpo_train": "nemo_rl.algorithms.grpo.grpo_train",
    "async_grpo_train": "nemo_rl.algorithms.grpo.async_grpo_train",
    # not called: NeMo-RL builds it from our data keys; its parameters say which keys it reads
    "ResponseDataset": "nemo_rl.data.datasets.response_datasets.ResponseDataset",
    # not called: wrapped for the per-step heartbeat (NativeResilience.watch_logger reads metrics, step)
    "Logger.log_metrics": "nemo_rl.utils.logger.Logger.log_metrics",
}
MATH_ENV = "nemo_rl.environments.math_environment.MathEnvironment"
#: the math example's own dataset and environment building (0.4 - 0.5)
MATH_EXAMPLE: dict[str, str] = {
    "load_response_dataset": "nemo_rl.data.datasets.load_response_dataset",
    "AllTaskProcessedDataset": "nemo_rl.data.datasets.AllTaskProcessedDataset",
    "TaskDataSpec": "nemo_rl.data.interfaces.TaskDataSpec",
    "math_hf_data_processor": "nemo_rl.data.processors.math_hf_data_processor",
    "MathEnvironment": MATH_ENV,
    "get_actor_python_env": "nemo_rl.distributed.ray_actor_environment_registry.get_actor_python_env",
}
SETUP_RESPONSE_DATA = {"setup_response_data": "nemo_rl.data.utils.setup_response_data"}
MASTER_CONFIG = {"MasterConfig": "nemo_rl.algorithms.grpo.MasterConfig"}
#: what ``setup`` returns, by position, per arity
SETUP_VALUES = {
    10: ("policy", "policy_generation", "clusters", "dataloader", "val_dataloader", "loss_fn", "logger",
         "checkpointer", "grpo_state", "master_config"),
    13: ("policy", "policy_generation", "nemo_gym_actor", "clusters", "dataloader", "val_dataloader", "loss_fn",
         "logger", "checkpointer", "grpo_state", "master_config", "teacher_worker_groups", "alias_to_group_alias"),
}


@dataclass(frozen=True)
class RLLine:
    """One NeMo-RL API line (see the module docstring).

    Attributes:
        name: how messages and the dry run call it.
        since, until: the versions it covers (``since <= v < until``).
        example: NeMo-RL's own entry script the flow follows.
        per_split_data: ``data.train``/``data.validation`` entries and
            ``setup_response_data`` (else the flat section and the math example's building).
        setup_values: how many values ``setup`` returns (:data:`SETUP_VALUES`).
        master_config_model: the config goes to ``setup`` as ``MasterConfig(**config)``.
        generation_flags: keyword arguments ``configure_generation_config`` takes beyond
            ``(config, tokenizer)``, each read from the config as NeMo-RL's example does.
        async_extra: values of ``setup`` that ``async_grpo_train`` also takes.
    """

    name: str
    since: str
    until: str | None
    example: str
    per_split_data: bool
    setup_values: int
    master_config_model: bool = False
    generation_flags: tuple[str, ...] = ()
    async_extra: tuple[str, ...] = ()
    extra_names: Mapping[str, str] = field(default_factory=dict)

    @property
    def names(self) -> dict[str, str]:
        """Every NeMo-RL name this line uses, by the short name the code calls it by."""
        return {**COMMON, **self.extra_names}


LINES: tuple[RLLine, ...] = (
    RLLine("0.4-0.5 (run_grpo_math)", "0.4.0", "0.6.0", "examples/run_grpo_math.py", per_split_data=False,
           setup_values=10, extra_names=MATH_EXAMPLE),
    RLLine("0.6 (run_grpo, per-split data)", "0.6.0", "0.7.0", "examples/run_grpo.py", per_split_data=True,
           setup_values=10, generation_flags=("has_refit_draft_weights",), extra_names=SETUP_RESPONSE_DATA),
    RLLine("0.7 (MasterConfig model, 13 setup values)", "0.7.0", "0.8.0", "examples/run_grpo.py",
           per_split_data=True, setup_values=13, master_config_model=True,
           generation_flags=("has_refit_draft_weights", "trains_mtp"),
           async_extra=("teacher_worker_groups", "alias_to_group_alias"),
           extra_names={**SETUP_RESPONSE_DATA, **MASTER_CONFIG}),
)
#: every name some line uses (the manifest script records them all, per release)
ALL_NAMES: dict[str, str] = {k: v for line in LINES for k, v in line.names.items()}


def line_for(version: str) -> RLLine | None:
    """The line covering the installed ``version``, or None (not supported)."""
    return next((line for line in LINES if in_range(version, line.since, line.until)), None)


def supported_range() -> str:
    """The versions the lines cover, for messages (``0.3.0rc0 to 0.6.x``)."""
    return range_text(LINES[0].since, LINES[-1].until)
