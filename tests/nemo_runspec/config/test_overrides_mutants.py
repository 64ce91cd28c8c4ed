"""Overrides (nemo_runspec/config/overrides.py docstring, docs/cli.md): the rules mutation
testing found unstated (docs/dev/mutation.md). Each error is checked whole: message,
key and hint, since they are what the user reads."""

from __future__ import annotations

from typing import Any

import pytest
from omegaconf import OmegaConf

from nemo_runspec.config.overrides import apply_overrides, parse_value
from nemo_runspec.errors import ConfigError


def apply(data: dict[str, Any], *overrides: str) -> Any:
    return OmegaConf.to_container(apply_overrides(OmegaConf.create(data), list(overrides)))


def error(data: dict[str, Any], *overrides: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        apply(data, *overrides)
    return info.value


# ------------------------------------------------------------------ lists and keys


def test_list_items_are_set_by_index() -> None:
    assert apply({"l": [1, 2, 3]}, "l.1=9", "l.0=x") == {"l": ["x", 9, 3]}


def test_a_list_index_past_the_end() -> None:
    err = error({"l": [1, 2, 3]}, "l.3=9")
    assert str(err).startswith("unknown key 'l.3' in override 'l.3=9'")
    err = error({"l": [1, 2, 3]}, "+l.3=9")
    assert str(err).startswith("list index 'l.3' out of range in override '+l.3=9'")
    assert err.key == "l.3" and err.hint == "set the whole list instead, e.g. key=[a,b]"


def test_integer_keys_of_a_mapping_are_found() -> None:
    assert apply({"m": {1: "a", 2: "b"}}, "m.1=z") == {"m": {1: "z", 2: "b"}}


# ------------------------------------------------------------------ add, force, delete


def test_adding_an_existing_key_says_how_to_change_it() -> None:
    err = error({"a": 1}, "+a=2")
    assert str(err).startswith("key 'a' already exists in override '+a=2'")
    assert err.key == "a" and err.hint == "use 'a=2' to change it"


def test_force_sets_or_adds_at_any_depth() -> None:
    assert apply({"a": 1}, "++a=2", "++c.d.e=3") == {"a": 2, "c": {"d": {"e": 3}}}


def test_adding_under_a_null_makes_a_mapping() -> None:
    assert apply({"a": None}, "+a.b=1") == {"a": {"b": 1}}


@pytest.mark.parametrize(("data", "kind"), [({"a": None}, "NoneType"), ({"a": 1}, "int"), ({"a": "s"}, "str")])
def test_setting_below_a_scalar_is_an_error(data: dict[str, Any], kind: str) -> None:
    err = error(data, "a.b=1")
    assert str(err) == f"cannot apply override 'a.b=1': 'a' is a {kind} value, not a mapping"
    assert err.key == "a"


def test_delete_with_a_value_deletes_only_that_value() -> None:
    assert apply({"a": 1, "b": 2}, "~a=1") == {"b": 2}
    assert apply({"a": 1, "b": 2}, "~a=") == {"b": 2}
    assert apply({"a": {"x": 1}, "b": 2}, "~a.x") == {"a": {}, "b": 2}
    err = error({"a": 1, "b": 2}, "~a=2")
    assert str(err) == "cannot delete 'a' in override '~a=2': its value is 1, not 2" and err.key == "a"


def test_deleting_an_unknown_key_lists_the_valid_ones() -> None:
    err = error({"alpha": 1, "beta": 2}, "~zzz")
    assert str(err).startswith("unknown key 'zzz' in override '~zzz'")
    assert err.hint == "valid: alpha, beta" and err.key == "zzz"
    many = {f"key{i:02d}": i for i in range(13)}
    assert error(many, "~zzz").hint is None  # too many to list


def test_an_unknown_nested_key_names_its_full_path() -> None:
    err = error({"train": {"lr": 1, "steps": 2}}, "train.stepz=3")
    assert str(err).startswith("unknown key 'train.stepz' in override 'train.stepz=3'")
    assert err.key == "train.stepz" and err.hint == "did you mean 'train.steps'?"
    err = error({"alpha": 1}, "zzz.q=1")
    assert err.key == "zzz" and err.hint == "use '+zzz.q=1' to add a new key"


def test_the_source_of_an_override_is_named() -> None:
    with pytest.raises(ConfigError, match="unknown key 'zzz' in override 'zzz=1' from job.yaml"):
        apply_overrides(OmegaConf.create({"a": 1}), ["zzz=1"], source="job.yaml")


# ------------------------------------------------------------------ run.env and run.wandb


def test_run_env_keys_need_no_plus_and_are_created() -> None:
    assert apply({"x": 1}, "run.env.partition=batch", "run.env.env_vars.HF_HOME=/h") == {
        "x": 1, "run": {"env": {"partition": "batch", "env_vars": {"HF_HOME": "/h"}}}}


def test_an_unknown_run_env_key_gets_a_profile_key_suggestion() -> None:
    err = error({"x": 1}, "run.env.partitio=batch")
    assert err.key == "run.env.partitio" and err.hint == "did you mean 'run.env.partition'?"


def test_deleting_an_absent_run_env_key_is_no_error() -> None:
    assert apply({"x": 1}, "~run.env.partition") == {"x": 1}
    assert apply({"x": 1, "run": {"env": {}}}, "~run.env.nodes") == {"x": 1, "run": {"env": {}}}


def test_run_wandb_keys_need_no_plus() -> None:
    assert apply({"x": 1}, "run.wandb.project=p") == {"x": 1, "run": {"wandb": {"project": "p"}}}
    assert error({"x": 1}, "run.wandb.nosuch=p").key == "run"


def test_env_vars_written_as_a_list_become_a_table_before_a_set() -> None:
    data = {"run": {"env": {"env_vars": ["A=1", "B=2"]}}}
    assert apply(data, "run.env.env_vars.B=3", "run.env.env_vars.C=x") == {
        "run": {"env": {"env_vars": {"A": "1", "B": 3, "C": "x"}}}}
    # other overrides leave the list as written
    assert apply(data, "+other=1") == {**data, "other": 1}


# ------------------------------------------------------------------ quoted values


@pytest.mark.parametrize(("text", "value"), [
    ("'it''s'", "it's"),            # '' is a quote inside single quotes
    ('"a\\"b"', 'a"b'),             # \" is a quote inside double quotes
    ('"x\'y"', "x'y"),
    ("'a\"b'", 'a"b'),
    ("'[1, 2'", "[1, 2"),           # brackets inside quotes are text
    ("['a]', 'b']", ["a]", "b"]),
])
def test_quotes_and_what_they_protect(text: str, value: Any) -> None:
    assert parse_value(text) == value


@pytest.mark.parametrize(("text", "problem"), [
    ("'abc", "unclosed"),
    ('"a\\"', "unclosed"),
    ("'a'b", "text after the closing quote"),
    ("[1, 'a]", "unclosed"),
])
def test_broken_quotes_are_errors(text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        parse_value(text)
