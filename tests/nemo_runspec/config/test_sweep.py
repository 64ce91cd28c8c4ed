"""Hydra's sweep grammar (config/sweep_grammar.py) and the expansion of a command line
into points (config/sweep.py); the values expected are Hydra's documented meaning."""

from __future__ import annotations

import pytest

from nemo_runspec.config.sweep import expand, refuse_unmarked_sweeps
from nemo_runspec.errors import ConfigError


def test_points_are_the_product_first_override_slowest():
    plan = expand(["a=1,2", "b=x", "+c=range(2)"])
    assert [p.overrides for p in plan.points] == [
        ("a=1", "b=x", "+c=0"), ("a=1", "b=x", "+c=1"), ("a=2", "b=x", "+c=0"), ("a=2", "b=x", "+c=1")]
    assert [p.index for p in plan.points] == [0, 1, 2, 3]
    assert plan.points[3].values == {"a": "2", "c": "1"}
    assert plan.keys == ("a", "c")


def test_config_sweep_and_glob_over_config_names():
    plan = expand(["x=1,2"], config="glob(t*)", config_names=["default", "test", "tiny"])
    assert [(p.config, p.overrides) for p in plan.points] == [
        ("test", ("x=1",)), ("test", ("x=2",)), ("tiny", ("x=1",)), ("tiny", ("x=2",))]
    plan = expand(["x=1"], config="glob(include=[*], exclude=tiny)", config_names=["default", "tiny"])
    assert [p.config for p in plan.points] == ["default"]
    with pytest.raises(ConfigError, match="matches no config"):
        expand(["x=1,2"], config="glob(nothing*)", config_names=["default"])


def test_glob_on_a_key_is_refused():
    with pytest.raises(ConfigError, match="glob\\(\\) chooses among named options"):
        expand(["model=glob(*)"])


def test_the_same_command_gives_the_same_key_and_another_command_another():
    a = expand(["a=1,2", "b=3"]).key("nano3/pretrain", "dev")
    assert a == expand(["a=1,2", "b=3"]).key("nano3/pretrain", "dev")
    assert a != expand(["a=1,2", "b=4"]).key("nano3/pretrain", "dev")
    assert a != expand(["a=1,2", "b=3"]).key("nano3/pretrain", "prod")


@pytest.mark.parametrize(("overrides", "words"), [
    (["x=1"], "no override is a sweep"),
    (["a=1,2", "a=3,4"], "a is swept twice"),
    (["a=1,2,1"], "lists 1 twice"),
    (["~a=1,2"], "cannot sweep a deletion"),
])
def test_bad_sweeps(overrides, words):
    with pytest.raises(ConfigError, match=words):
        expand(overrides)


def test_without_multirun_a_sweep_on_a_number_suggests_m_and_text_stays_text():
    data = {"train": {"train_iters": 20, "flag": True, "name": "x"}}
    with pytest.raises(ConfigError) as err:
        refuse_unmarked_sweeps(lambda: data, ["train.train_iters=10,20"])
    assert "add -m/--multirun" in str(err.value) and "train.train_iters=10" in str(err.value)
    with pytest.raises(ConfigError, match="the bool train.flag"):
        refuse_unmarked_sweeps(lambda: data, ["train.flag=choice(true,false)"])
    refuse_unmarked_sweeps(lambda: data, ["train.name=a,b", "train.train_iters=5"])  # no error
    listed = {"data": {"paths": ["a"], "mix": {"a": 1}}}
    with pytest.raises(ConfigError, match="the list data.paths"):
        refuse_unmarked_sweeps(lambda: listed, ["data.paths=[a],[b]"])
    with pytest.raises(ConfigError, match="the mapping data.mix"):
        refuse_unmarked_sweeps(lambda: listed, ["data.mix={a: 1},{a: 2}"])
    calls = []
    refuse_unmarked_sweeps(lambda: calls.append(1), ["train.train_iters=5", "x=[1,2]"])
    assert calls == []  # the config is not even looked at without a sweep-shaped value
