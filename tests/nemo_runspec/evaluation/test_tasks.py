"""Task selection of an evaluation (nemo_runspec.evaluation.tasks): ``--task`` flags, the config's
``tasks`` list, and which entries of ``evaluation.tasks`` they select."""

from __future__ import annotations

import pytest

from nemo_runspec.errors import CLIUsageError, ConfigError
from nemo_runspec.evaluation.tasks import parse_task_flags, select_tasks, wanted_tasks


def test_task_flags_in_every_spelling_keep_first_seen_order_and_the_other_words() -> None:
    assert parse_task_flags(["-t", "mmlu", "--task=gsm8k,mmlu", "x=1"]) == (["mmlu", "gsm8k"], ["x=1"])
    assert parse_task_flags(["-tgsm8k", "--task", "a, b", "-t=c", "--other"]) == (["gsm8k", "a", "b", "c"], ["--other"])
    assert parse_task_flags(["x=1", "--", "y"]) == ([], ["x=1", "--", "y"])


@pytest.mark.parametrize("args", [["-t"], ["--task", "-d"], ["--task", " "], ["--task="], ["-t", ","]])
def test_a_task_flag_without_a_name_is_a_usage_error(args: list[str]) -> None:
    with pytest.raises(CLIUsageError, match="needs a task name"):
        parse_task_flags(args)


def test_the_config_tasks_as_a_list() -> None:
    assert wanted_tasks({}) == [] and wanted_tasks({"tasks": None}) == [] and wanted_tasks({"tasks": []}) == []
    assert wanted_tasks({"tasks": "mmlu, gsm8k,"}) == ["mmlu", "gsm8k"]
    assert wanted_tasks({"tasks": ["mmlu", 7]}) == ["mmlu", "7"]
    with pytest.raises(ConfigError) as err:
        wanted_tasks({"tasks": 3})
    assert err.value.key == "tasks"


TASKS = ["lm-evaluation-harness.mmlu", {"name": "simple_evals.gsm8k", "params": {}}, "harness.xmmlu"]


def test_a_short_name_selects_the_task_of_any_harness_in_config_order() -> None:
    assert select_tasks(TASKS, ["gsm8k", "mmlu"]) == [TASKS[0], TASKS[1]]
    assert select_tasks(TASKS, ["simple_evals.gsm8k"]) == [TASKS[1]]
    assert select_tasks(TASKS, ["xmmlu"]) == [TASKS[2]]  # "mmlu" is not a suffix after a dot here
    assert select_tasks(TASKS, []) == TASKS


def test_a_name_that_selects_nothing_names_what_there_is() -> None:
    with pytest.raises(ConfigError) as err:
        select_tasks(TASKS, ["mmlx"], key="evaluation.tasks")
    assert "unknown task 'mmlx'" in str(err.value)
    assert err.value.key == "evaluation.tasks"
    assert "mmlu" in (err.value.hint or "")
