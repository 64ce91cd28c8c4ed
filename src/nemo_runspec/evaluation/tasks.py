"""Which tasks of an evaluation config run: ``--task``/``-t`` flags (:func:`parse_task_flags`),
the config's ``tasks`` list (:func:`wanted_tasks`) and the selection from the launcher config's
``evaluation.tasks`` (:func:`select_tasks`). :mod:`nemo_runspec.evaluation.evaluator` re-exports them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nemo_runspec.errors import CLIUsageError, ConfigError

_TASK_FLAGS = ("-t", "--task")


def parse_task_flags(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split ``--task NAME`` / ``-t NAME`` (also ``--task=NAME``, ``-tNAME`` and
    comma lists ``--task a,b``) off ``args``: returns ``(tasks, other args)``.

    Task names keep their first-seen order and appear once.

    >>> parse_task_flags(["-t", "mmlu", "--task=gsm8k,mmlu", "x=1"])
    (['mmlu', 'gsm8k'], ['x=1'])
    """
    tasks: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word in _TASK_FLAGS:
            if i + 1 >= len(args) or not args[i + 1].strip() or args[i + 1].startswith("-"):
                raise CLIUsageError(f"{word} needs a task name", hint="e.g. --task mmlu (repeatable)")
            value, i = args[i + 1], i + 2
        elif word.startswith("--task="):
            value, i = word[len("--task="):], i + 1
        elif word.startswith("-t") and not word.startswith("--") and len(word) > 2:
            value, i = word[2:].removeprefix("="), i + 1
        else:
            rest.append(word)
            i += 1
            continue
        names = [n.strip() for n in value.split(",") if n.strip()]
        if not names:
            raise CLIUsageError(f"{word} needs a task name", hint="e.g. --task mmlu (repeatable)")
        tasks.extend(n for n in names if n not in tasks)
    return tasks, rest


def wanted_tasks(config: Mapping[str, Any]) -> list[str]:
    """The ``tasks`` selection of a config as a list (``null`` or ``[]``: every task)."""
    value = config.get("tasks")
    if value in (None, "", []):
        return []
    if isinstance(value, str):
        return [n.strip() for n in value.split(",") if n.strip()]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    raise ConfigError(f"tasks must be a list of task names, got {value!r}", key="tasks")


def _matches(task_name: str, wanted: str) -> bool:
    # "mmlu" selects "lm-evaluation-harness.mmlu"; the full "harness.task" name selects it too.
    return task_name == wanted or task_name.endswith("." + wanted)


def select_tasks(tasks: Sequence[Any], wanted: Sequence[str], *, key: str = "evaluation.tasks") -> list[Any]:
    """The entries of ``tasks`` (names, or mappings with a ``name``) that ``wanted`` selects, in
    their config order. Empty ``wanted`` selects all. A name that selects nothing is a
    :class:`ConfigError` listing what there is."""
    if not wanted:
        return list(tasks)
    names = [str(t.get("name") if isinstance(t, Mapping) else t) for t in tasks]
    chosen: set[int] = set()
    for w in wanted:
        hits = [i for i, n in enumerate(names) if _matches(n, w)]
        if not hits:
            from nemo_runspec._suggest import did_you_mean

            short = sorted({n.rsplit(".", 1)[-1] for n in names} | set(names))
            raise ConfigError(f"unknown task {w!r}", key=key,
                              hint=did_you_mean(w, short, listing=True) or "the config lists no tasks")
        chosen.update(hits)
    return [t for i, t in enumerate(tasks) if i in chosen]
