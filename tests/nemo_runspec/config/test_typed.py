"""A config section checked against a pydantic model (config/typed.py): the first problem is one
line naming the key, the value as written, the expected type, where it was set and a hint."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from nemo_runspec.config.typed import check_model, describe, is_interpolation, plain, yaml_text
from nemo_runspec.errors import ConfigError


class Fallback(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    max_steps: int = Field(default=10, ge=1)
    lr: float | None = None
    mode: Literal["fast", "slow"] = "fast"
    tags: list[str] = Field(default_factory=list)


def test_a_good_section_validates():
    assert check_model({"max_steps": 3, "mode": "slow"}, Fallback).max_steps == 3


def test_a_bad_value_names_key_value_type_and_the_override_that_set_it(tmp_path):
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text("max_steps: 3\n")
    with pytest.raises(ConfigError) as e:  # the override, not the file's line, set the value
        check_model({"max_steps": "abc"}, Fallback, prefix="fallback", overrides=["lr=1", "max_steps=abc"],
                    files=[cfg])
    text = str(e.value)
    assert "key 'fallback.max_steps' must be an integer >= 1, got string 'abc'" in text
    assert "in override 'max_steps=abc'" in text and e.value.path is None


def test_an_unknown_key_suggests_the_known_one_at_its_yaml_line(tmp_path):
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text("max_steps: 1\nmax_step: 3\n")
    with pytest.raises(ConfigError) as e:
        check_model({"max_step": 3}, Fallback, prefix="fallback", files=[cfg])
    assert (e.value.path, e.value.line) == (str(cfg), 2)
    assert str(e.value).endswith("unknown key 'fallback.max_step' (did you mean 'fallback.max_steps'?)")


def test_interpolations_pass_when_allowed():
    assert check_model({"max_steps": "${oc.env:STEPS}"}, Fallback, allow_interpolations=True) is None
    with pytest.raises(ConfigError):
        check_model({"max_steps": "${oc.env:STEPS}"}, Fallback)
    assert is_interpolation("${a}") and not is_interpolation("a") and not is_interpolation(3)


def test_types_are_described_as_a_yaml_user_reads_them():
    fields = Fallback.model_fields
    assert describe(fields["max_steps"].annotation, fields["max_steps"].metadata) == "an integer >= 1"
    assert describe(fields["lr"].annotation) == "a number or null"
    assert describe(fields["mode"].annotation) == "one of 'fast', 'slow'"
    assert describe(fields["tags"].annotation) == "a list of strings"
    assert describe(Fallback) == "a mapping"
    assert describe(int | float) == "a number"  # an integer is a number too


def test_values_are_written_as_in_yaml():
    assert [yaml_text(v) for v in (None, True, [1, "a"], "yes", " x", "-1x", "plain", 3)] == [
        "null", "true", "[1, a]", '"yes"', '" x"', '"-1x"', "plain", "3"]
    assert plain({"a": ({"b": 1},)}) == {"a": [{"b": 1}]}
