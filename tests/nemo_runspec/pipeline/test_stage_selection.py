"""Which stages ``--stages`` names (stage_selection.select_stages): names and ranges in pipeline
order, unknown names and reversed ranges refused with the stages listed."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from nemo_runspec import pipeline
from nemo_runspec.errors import CLIUsageError, NemoRunspecError
from nemo_runspec.pipeline.stage_selection import select_stages
from nemo_runspec.pipeline.step import Step
from tests.nemotron.cli.test_inputs_limits import STAGES

STEPS = [Step(name=n, script=Path(f"{n}.py")) for n in ("prep", "pretrain", "sft", "rl")]


def names(text):
    return [s.name for s in select_stages(STEPS, text)]


def test_nothing_named_is_every_stage():
    assert names(None) == names("") == ["prep", "pretrain", "sft", "rl"]


def test_names_and_ranges_come_back_in_pipeline_order():
    assert names("sft,prep") == ["prep", "sft"]
    assert names("pretrain:sft") == ["pretrain", "sft"]
    assert names(":pretrain") == ["prep", "pretrain"]
    assert names("sft:") == ["sft", "rl"]
    assert names("rl, prep:pretrain") == ["prep", "pretrain", "rl"]


@pytest.mark.parametrize(("text", "words"), [
    ("sfft", "no stage 'sfft' in this pipeline (did you mean 'sft'?"),
    ("rl:pretrain", "stage range 'rl:pretrain' is reversed: rl runs after pretrain (write pretrain:rl"),
    (" , ", "--stages ' , ' names no stage (stages: prep, pretrain, sft, rl)"),
])
def test_bad_selections_are_one_line_usage_errors(text, words):
    with pytest.raises(CLIUsageError) as e:
        select_stages(STEPS, text)
    assert words in str(e.value)


@pytest.mark.parametrize(("first", "last"), list(itertools.product(["", *STAGES], repeat=2)))
def test_every_stage_range_is_a_selection_or_one_line(first: str, last: str) -> None:
    steps = [Step(n, Path(f"/x/{n}.py")) for n in STAGES]
    lo = STAGES.index(first) if first else 0
    hi = STAGES.index(last) if last else len(STAGES) - 1
    if lo <= hi:
        assert [s.name for s in pipeline.select_stages(steps, f"{first}:{last}")] == STAGES[lo:hi + 1]
    else:
        with pytest.raises(NemoRunspecError) as info:
            pipeline.select_stages(steps, f"{first}:{last}")
        assert str(info.value) == (f"stage range '{first}:{last}' is reversed: {first} runs after {last} "
                                   f"(write {last}:{first}; stages in order: a, b, c, d)")


@pytest.mark.parametrize("names", [",", " , ,"])
def test_stages_that_name_nothing(names: str) -> None:
    with pytest.raises(NemoRunspecError, match="names no stage"):
        pipeline.select_stages([Step("a", Path("/x/a.py"))], names)
