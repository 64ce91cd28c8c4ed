"""Reading a nested mapping by a dotted key (dotted.lookup)."""

from __future__ import annotations

from nemo_runspec.runtime.dotted import lookup


def test_a_dotted_key_reads_the_nested_value():
    data = {"run": {"wandb": {"project": "p"}}, "top": 1}
    assert lookup(data, "run.wandb.project") == "p"
    assert lookup(data, "run.wandb") == {"project": "p"}
    assert lookup(data, "top") == 1


def test_a_missing_part_or_a_level_that_is_not_a_mapping_is_none():
    data = {"run": {"wandb": "off"}, "n": None}
    assert lookup(data, "run.missing") is None
    assert lookup(data, "run.wandb.project") is None  # "off" is not a mapping
    assert lookup(data, "n.x") is None
    assert lookup(None, "a") is None
