"""Overrides (nemo_runspec/config/overrides.py docstring, docs/cli.md): the rules mutation
testing found unstated (docs/dev/mutation.md). Each error is checked whole: message,
key and hint, since they are what the user reads."""

from __future__ import annotations

from typing import Any

import pytest
from omegaconf import OmegaConf

from nemo_runspec.config import override_values
from nemo_runspec.config.overrides import (
    _FORMS,
    Override,
    apply_overrides,
    canonical,
    parse_override,
    parse_value,
)
from nemo_runspec.errors import ConfigError, EnvFileError


def apply(data: dict[str, Any], *overrides: str) -> Any:
    return OmegaConf.to_container(apply_overrides(OmegaConf.create(data), list(overrides)))


def error(data: dict[str, Any], *overrides: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        apply(data, *overrides)
    return info.value


# ------------------------------------------------------------------ lists and keys


def test_list_items_are_set_by_index() -> None:
    assert apply({"l": [1, 2, 3]}, "l.1=9", "l.0=7") == {"l": [7, 9, 3]}
    assert apply({"l": ["a", 2]}, "l.0=x") == {"l": ["x", 2]}


def test_a_list_index_past_the_end() -> None:
    err = error({"l": [1, 2, 3]}, "l.3=9")
    assert str(err).startswith("index 3 is past the end of 'l' (3 item(s): 0..2) in override 'l.3=9'")
    err = error({"l": [1, 2, 3]}, "+l.3=9")
    assert str(err).startswith("index 3 is past the end of 'l' (3 item(s): 0..2) in override '+l.3=9'")
    assert err.key == "l.3" and err.hint == "set the whole list instead, e.g. l=[a,b]"


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


# ------------------------------------------------------------------ the reference's spellings


def test_run_key_of_a_profile_key_is_run_env_key() -> None:
    assert apply({"x": 1}, "run.nodes=8") == {"x": 1, "run": {"env": {"nodes": 8}}}
    assert apply({"run": {"data": 1}}, "run.nodes=8") == {"run": {"data": 1, "env": {"nodes": 8}}}
    assert apply({"run": {"env": {"nodes": 2}}}, "~run.nodes") == {"run": {"env": {}}}


def test_run_key_the_config_has_itself_stays_where_it_is() -> None:
    assert apply({"run": {"nodes": 2}}, "run.nodes=8") == {"run": {"nodes": 8}}
    assert apply({"run": {"nodes": {"a": 1}}}, "run.nodes.a=2") == {"run": {"nodes": {"a": 2}}}
    # only run.KEY: another top-level table holding a profile key's name is left alone
    assert apply({"x": {"nodes": 0}}, "x.nodes=1") == {"x": {"nodes": 1}}


def test_adding_under_run_is_not_read_as_the_shorthand() -> None:
    assert apply({"x": 1}, "+run.nodes=8") == {"x": 1, "run": {"nodes": 8}}
    assert apply({"x": 1}, "++run.nodes=8") == {"x": 1, "run": {"nodes": 8}}


@pytest.mark.parametrize("override", ["run.env.container=img", "run.container=img"])
def test_container_is_container_image(override: str) -> None:
    assert apply({"x": 1}, override) == {"x": 1, "run": {"env": {"container_image": "img"}}}


def test_the_synonym_is_named_by_its_canonical_key_in_errors() -> None:
    err = error({"run": {"env": {"container_image": "a"}}}, "run.env.container.x=1")
    assert str(err) == ("cannot apply override 'run.env.container.x=1': "
                        "'run.env.container_image' is a str value, not a mapping")
    assert err.key == "run.env.container_image"


def test_canonical_rewrites_path_and_key_and_keeps_the_rest() -> None:
    ov = parse_override("run.container='img'")
    out = canonical(ov, None)
    assert out == Override(raw="run.container='img'", op="set", key="run.env.container_image",
                           path=("run", "env", "container_image"), text="'img'", value="img")
    same = parse_override("run.data=1")
    assert canonical(same, {"data": 0}) is same


def test_run_env_itself_can_be_set_whole() -> None:
    assert apply({"run": {"env": {"a": 1}}}, "run.env={b: 2}") == {"run": {"env": {"b": 2}}}


def test_deleting_an_absent_run_wandb_key_is_no_error() -> None:
    assert apply({"x": 1}, "~run.wandb.project") == {"x": 1}


# ------------------------------------------------------------------ did-you-mean hints


def test_an_unknown_run_env_key_is_matched_against_the_keys_already_there() -> None:
    err = error({"run": {"env": {"myfoo": 1}}}, "run.env.myfoa=2")
    assert str(err) == ("unknown key 'run.env.myfoa' in override 'run.env.myfoa=2' "
                        "(did you mean 'run.env.myfoo'?)")


@pytest.mark.parametrize("override", ["run.nodez=1", "~run.nodez", "run.nodez.x=1"])
def test_a_typo_directly_under_run_suggests_the_profile_key(override: str) -> None:
    err = error({"run": {"data": 1}}, override)
    assert str(err) == f"unknown key 'run.nodez' in override '{override}' (did you mean 'run.nodes'?)"
    assert err.key == "run.nodez"


@pytest.mark.parametrize(("data", "override", "hint"), [
    ({"a": {"k": 1}}, "~a.zzz", "valid: a.k"),
    ({"a": {"b": {"k": 1}}}, "~a.b.zzz", "valid: a.b.k"),
    ({"run": {"data": {"k": 1}}}, "~run.data.zzz", "valid: run.data.k"),
    ({"a": {}}, "~a.zzz", None),
    ({"a": {f"k{i:02}": i for i in range(12)}}, "~a.zzz", "valid: " + ", ".join(f"a.k{i:02}" for i in range(12))),
    ({"a": {f"k{i:02}": i for i in range(13)}}, "~a.zzz", None),
])
def test_delete_hint_lists_the_valid_keys_of_that_table_only(
        data: dict[str, Any], override: str, hint: str | None) -> None:
    """Profile keys are candidates only directly under run and run.env; up to 12 keys are listed."""
    assert error(data, override).hint == hint


def test_a_missing_list_index_hint_does_not_suggest_list_values() -> None:
    assert error({"l": [1, 2, 3]}, "l.3=9").hint == "set the whole list instead, e.g. l=[a,b]"


def test_run_env_written_as_a_list_is_an_error_naming_the_key() -> None:
    """run.env must be a table; a list there fails with the profile-key hint of a miss
    directly under run.env (not a Python error)."""
    err = error({"run": {"env": [1]}}, "run.env.nodes.x=1")
    assert err.key == "run.env.nodes"
    assert err.hint == "did you mean 'run.env.nodes'?"


# ------------------------------------------------------------------ keys


@pytest.mark.parametrize("seg", ["1-", "X1", "1a"])
def test_keys_that_only_contain_digits_are_not_integer_keys(seg: str) -> None:
    assert apply({"m": {1: "a"}}, f"+m.{seg}=z") == {"m": {1: "a", seg: "z"}}


# ------------------------------------------------------------------ env_vars written as a list


def test_env_vars_list_is_left_alone_by_overrides_elsewhere() -> None:
    data = {"run": {"env": {"env_vars": ["A=1"]}}, "a": {"b": {"c": {"d": 1}}}}
    assert apply(data, "a.b.c.d=2") == {**data, "a": {"b": {"c": {"d": 2}}}}
    # setting the whole list does not read the old one (which may be broken)
    broken = {"run": {"env": {"env_vars": ["NOEQ"]}}}
    assert apply(broken, "run.env.env_vars=[B=2]") == {"run": {"env": {"env_vars": ["B=2"]}}}


def test_run_env_vars_of_the_config_itself_is_not_the_profile_list() -> None:
    data = {"run": {"env_vars": {"A": 1}, "env": {"env_vars": ["X=1"]}}}
    assert apply(data, "run.env_vars.A=3") == {
        "run": {"env_vars": {"A": 3}, "env": {"env_vars": ["X=1"]}}}


def test_a_broken_env_vars_list_names_the_recipe_config() -> None:
    with pytest.raises(EnvFileError) as info:
        apply({"run": {"env": {"env_vars": ["NOEQ"]}}}, "run.env.env_vars.B=1")
    assert str(info.value).startswith(
        "recipe config: entry 0 of 'env_vars' in run.env must be a \"NAME=value\" string")


# ------------------------------------------------------------------ malformed overrides


@pytest.mark.parametrize(("raw", "message", "hint"), [
    ("", "empty override", _FORMS),
    ("=1", "malformed override '=1': missing key before '='", _FORMS),
    ("a", "malformed override 'a': missing '=VALUE'", _FORMS),
    ("a b=1", "malformed override 'a b=1': invalid key 'a b'", "keys are dot-separated names like 'train.lr'"),
])
def test_malformed_overrides_say_which_forms_exist(raw: str, message: str, hint: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_override(raw)
    assert str(info.value) == f"{message} ({hint})"
    assert info.value.hint == hint


def test_the_source_of_a_malformed_override_is_named() -> None:
    with pytest.raises(ConfigError) as info:
        apply_overrides(OmegaConf.create({"a": 1}), ["=1"], source="f.yaml")
    assert str(info.value).startswith("malformed override '=1' from f.yaml: missing key")


@pytest.mark.parametrize("raw", ["~a", "~a="])
def test_a_bare_delete_has_its_key_and_no_value(raw: str) -> None:
    ov = parse_override(raw)
    assert (ov.raw, ov.op, ov.key, ov.path, ov.has_value) == (raw, "delete", "a", ("a",), False)


def test_no_overrides_returns_an_independent_copy() -> None:
    cfg = OmegaConf.create({"a": {"b": 1}})
    out = apply_overrides(cfg, [])
    out.a.b = 2
    assert cfg.a.b == 1 and out == {"a": {"b": 2}}


# ------------------------------------------------------------------ values


def test_the_yaml_loader_is_made_on_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(override_values, "_LOADER", None)
    assert parse_value("5") == 5
    assert parse_value("[1, x]") == [1, "x"]


@pytest.mark.parametrize("text", ["{1.5: a}", "[{1.5: a}]", "{a: {1.5: b}}", "!!set {a, b}"])
def test_values_omegaconf_cannot_hold_stay_text(text: str) -> None:
    """Float keys and YAML types beyond scalars, lists and mappings are kept as typed."""
    assert parse_value(text) == text


@pytest.mark.parametrize("text", ['["${x"]', '{a: "${x"}', '{a: ["${x"]}'])
def test_interpolations_are_checked_inside_lists_and_mappings(text: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_value(text)
    assert str(info.value).startswith(f"invalid value '{text}': malformed interpolation '${{x'")
    assert info.value.hint == (
        "interpolations look like ${key} or ${art:name,field}; write \\${ for a literal ${")


@pytest.mark.parametrize(("text", "shown", "hint"), [
    ("[é", "'[é'", 'to pass it as text, quote it: "[é"'),
    ("[é\t", "'[é\\t'", 'to pass it as text, quote it: "[\\u00e9\\t"'),
])
def test_the_quote_hint_is_readable_and_unprintables_escaped(text: str, shown: str, hint: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_value(text)
    assert str(info.value) == f"invalid value {shown}: unclosed '[' ({hint})"
    assert info.value.hint == hint


@pytest.mark.parametrize(("text", "problem"), [
    ('["a\\"b", 1', "unclosed '['"),       # \" does not close the string
    ('["\\\\", 1', "unclosed '['"),        # \\ is one backslash: the quote after it closes
    ('["", 1', "unclosed '['"),            # empty strings
    ("['', 1", "unclosed '['"),
    ("['it''s', 1", "unclosed '['"),       # '' inside single quotes
    ("['a''', 1", "unclosed '['"),
    ("['a'''", "unclosed '['"),
    ("['a]'", "unclosed '['"),             # brackets inside quotes after [ { : are text
    ("{'a}': 1", "unclosed '{'"),
    ("{a: 'x}'", "unclosed '{'"),
    ("['a']]", "']' without an opening '['"),
    ("[X, 1", "unclosed '['"),
    ("[}", "'}' closes '['"),
    ("[{[}", "'}' closes '['"),
    ("[1, 2]]", "']' without an opening '['"),
    ('"a"b', "text after the closing quote"),
    ("'a''b", "unclosed single quote"),
    ('["a\\"', "unclosed double quote"),
])
def test_where_a_broken_value_breaks(text: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_value(text)
    assert str(info.value).startswith(f"invalid value '{text}': {problem} (")


# ------------------------------------------------------------------ list errors, whole (round 3)


@pytest.mark.parametrize("override, message, key", [
    # a missing index on the way down (through the unknown-key path)
    ("a.l.5.x=1", "index 5 is past the end of 'a.l' (2 item(s): 0..1) in override 'a.l.5.x=1' from job.yaml",
     "a.l.5"),
    # the last segment, set
    ("a.l.2=1", "index 2 is past the end of 'a.l' (2 item(s): 0..1) in override 'a.l.2=1' from job.yaml", "a.l.2"),
    # the last segment, add and force (lists do not grow)
    ("+a.l.b=1", "'a.l' is a list and 'b' is not an index in override '+a.l.b=1' from job.yaml", "a.l.b"),
    ("++a.e.0=1", "'a.e' is an empty list in override '++a.e.0=1' from job.yaml", "a.e.0"),
])
def test_list_errors_whole_with_their_source_and_key(override: str, message: str, key: str) -> None:
    """The message names the nested list by its dotted path, the source of the override, the
    key down to the missing segment (not beyond it), and the hint sets the whole list."""
    with pytest.raises(ConfigError) as info:
        apply_overrides(OmegaConf.create({"a": {"l": [1, 2], "e": []}}), [override], source="job.yaml")
    hint = "set the whole list instead, e.g. " + ".".join(key.split(".")[:2]) + "=[a,b]"
    assert str(info.value) == f"{message} ({hint})"
    assert (info.value.key, info.value.hint) == (key, hint)


@pytest.mark.parametrize("override", ["run.env.qqqqq=1", "+run.env.qqqqq.x=1"])
def test_run_env_as_a_list_never_suggests_its_items(override: str) -> None:
    """Under a run.env written as a list the candidates are the profile keys, not the list's values."""
    err = error({"run": {"env": ["qqqqqq"]}}, override)
    assert err.key == "run.env.qqqqq"
    assert "qqqqqq" not in (err.hint or "")


# ------------------------------------------------------------------ interpolations in flow collections


def test_interpolation_keys_of_a_mapping_come_back() -> None:
    assert parse_value("{${x}: 1, k: ${y}}") == {"${x}": 1, "k": "${y}"}


def test_a_value_holding_the_placeholder_stem_is_read_as_written() -> None:
    """The tokens that stand in for ${...} while YAML reads a list are chosen so that they
    cannot occur in the value itself."""
    assert parse_value("[nemotroninterp, nemotroninterp0z, ${x}]") == ["nemotroninterp", "nemotroninterp0z", "${x}"]
    assert parse_value("[nemotroninterpx0z, ${x}, x]") == ["nemotroninterpx0z", "${x}", "x"]


@pytest.mark.parametrize("text, problem", [
    ("[${x}, ${y, 2]", "']' closes '{'"),
    ("{a: ${x, b: 1}", "unclosed '{'"),
])
def test_an_unclosed_interpolation_in_a_list_is_the_bracket_error(text: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_value(text)
    assert str(info.value).startswith(f"invalid value '{text}': {problem}")


def test_interpolations_are_set_aside_only_in_flow_collections() -> None:
    """Text that is not a list or mapping is checked as typed: the brackets after its
    interpolations are still counted."""
    with pytest.raises(ConfigError) as info:
        parse_value("${x}- [${b: }")
    assert str(info.value).startswith("invalid value '${x}- [${b: }': unclosed '['")


@pytest.mark.parametrize("text", ["a: ${x y}: b", "k: ${.}: v"])
def test_a_malformed_interpolation_in_text_yaml_cannot_read_is_refused(text: str) -> None:
    """Such text is kept as text, but a ${...} in it that OmegaConf cannot parse is an
    error now, not when the config is resolved on the cluster."""
    with pytest.raises(ConfigError) as info:
        parse_value(text)
    assert str(info.value).startswith(f"invalid value '{text}': malformed interpolation '{text}'")


def test_text_yaml_cannot_read_with_good_interpolations_stays_text() -> None:
    assert parse_value("a: ${x}: b") == "a: ${x}: b"
