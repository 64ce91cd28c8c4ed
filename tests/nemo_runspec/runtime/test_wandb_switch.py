"""The W&B switch (wandb_switch.py): which stage a recipe name is, and a stage the rule does not know takes either logger form."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(("name", "stage"), [("nano3/pretrain", "pretrain"), ("nano3/sft", "sft"),
                                             ("nano3/rl", "rl"), ("nano3/data/prep/rl", None),
                                             ("nano3/eval", None), ("mine", None)])
def test_stage_of_a_recipe_name(name, stage):
    from nemo_runspec.runtime.wandb_switch import stage_of

    assert stage_of(name) == stage


def test_a_stage_the_rule_does_not_know_takes_either_logger_form():
    """A data prep, an evaluation or a user's own script: the CLI cannot tell which backend
    form it reads, so either form forwards the key (the explicit off switch still wins)."""
    from nemo_runspec.runtime.wandb_switch import wandb_switch

    assert wandb_switch({"logger": {"wandb_project": "x"}}, None) == "logger.wandb_project"
    assert wandb_switch({"logger": {"wandb_enabled": True}}, None) == "logger.wandb_enabled"
    assert wandb_switch({"logger": {"wandb_enabled": "yes"}}, None) is None
    assert wandb_switch({"run": {"wandb": True}}, None) == "run.wandb"
    assert wandb_switch({"run": {"wandb": {"enabled": False}}, "logger": {"wandb_project": "x"}}, None) is None
