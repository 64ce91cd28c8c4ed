"""Tests for nemo_runspec.config.overrides: the override grammar and its errors."""

from __future__ import annotations

import sys
import types

import pytest
from hypothesis import given
from hypothesis import strategies as st
from omegaconf import OmegaConf

from nemo_runspec.config import apply_overrides, parse_override, parse_value
from nemo_runspec.errors import ConfigError


@pytest.fixture
def cfg():
    return OmegaConf.create(
        {
            "train": {"iters": 10, "lr": 0.1, "name": "x"},
            "model": {"layers": [1, 2, 3], "ref": "${train.iters}"},
            "data": {"path": "${art:data,path}"},
        }
    )


@pytest.fixture
def profile_keys(monkeypatch):
    """A stand-in nemo_runspec.env exposing a fixed PROFILE_KEYS set."""
    mod = types.ModuleType("nemo_runspec.env")
    mod.PROFILE_KEYS = frozenset({"partition", "nodes", "env_vars", "account", "time"})
    monkeypatch.setitem(sys.modules, "nemo_runspec.env", mod)
    return mod.PROFILE_KEYS


def raw(c):
    return OmegaConf.to_container(c, resolve=False)


def test_set_existing_key(cfg) -> None:
    out = apply_overrides(cfg, ["train.iters=5"])
    assert out.train.iters == 5
    assert cfg.train.iters == 10  # input untouched


def test_unknown_key_message_with_suggestion(cfg) -> None:
    with pytest.raises(ConfigError) as err:
        apply_overrides(cfg, ["train.iter=5"])
    assert str(err.value) == (
        "unknown key 'train.iter' in override 'train.iter=5' (did you mean 'train.iters'?)"
    )


def test_unknown_key_without_close_match_suggests_plus(cfg) -> None:
    with pytest.raises(ConfigError) as err:
        apply_overrides(cfg, ["train.zzzzzz=5"])
    assert "use '+train.zzzzzz=5' to add a new key" in str(err.value)


def test_unknown_intermediate_key(cfg) -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'trian' in override 'trian.lr=1' \(did you mean 'train'\?\)"):
        apply_overrides(cfg, ["trian.lr=1"])


def test_setting_below_a_scalar_is_an_error(cfg) -> None:
    with pytest.raises(ConfigError, match="'train.iters' is a int value, not a mapping"):
        apply_overrides(cfg, ["train.iters.x=1"])


def test_plus_adds_new_key_with_parents(cfg) -> None:
    out = apply_overrides(cfg, ["+train.warmup=3", "+new.deep.key=v"])
    assert out.train.warmup == 3
    assert out.new.deep.key == "v"
    assert "+train" not in out and "+new" not in out
    assert all(not str(k).startswith("+") for k in out.train)


def test_plus_on_existing_key_is_error_suggesting_plain_set(cfg) -> None:
    with pytest.raises(ConfigError) as err:
        apply_overrides(cfg, ["+train.iters=5"])
    assert str(err.value) == (
        "key 'train.iters' already exists in override '+train.iters=5' (use 'train.iters=5' to change it)"
    )


def test_double_plus_adds_or_sets(cfg) -> None:
    out = apply_overrides(cfg, ["++train.iters=7", "++train.fresh=1"])
    assert (out.train.iters, out.train.fresh) == (7, 1)


def test_delete(cfg) -> None:
    out = apply_overrides(cfg, ["~train.lr"])
    assert "lr" not in out.train
    assert out.train.iters == 10


def test_delete_missing_is_error(cfg) -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'train.lrr' in override '~train.lrr' \(did you mean 'train.lr'\?\)"):
        apply_overrides(cfg, ["~train.lrr"])


def test_conditional_delete(cfg) -> None:
    out = apply_overrides(cfg, ["~train.iters=10"])
    assert "iters" not in out.train
    with pytest.raises(ConfigError, match=r"cannot delete 'train.iters'.*its value is 10, not 11"):
        apply_overrides(cfg, ["~train.iters=11"])


def test_null_sets_none(cfg) -> None:
    out = apply_overrides(cfg, ["train.name=null", "train.lr=~"])
    assert out.train.name is None and out.train.lr is None


@pytest.mark.parametrize(
    "text, expected",
    [
        ("5", 5),
        ("-3", -3),
        ("1e-4", 1e-4),
        ("3.5", 3.5),
        ("[1,2]", [1, 2]),
        ("[a, b]", ["a", "b"]),
        ("{a: 1}", {"a": 1}),
        ("true", True),
        ("false", False),
        ("'5'", "5"),
        ('"true"', "true"),
        ("hello", "hello"),
        ("x=y", "x=y"),
        ("a: b", "a: b"),
        ("foo #bar", "foo #bar"),
        ("#x", "#x"),
        ("@at", "@at"),
        ("", ""),
        ("null", None),
        ("2024-01-01", "2024-01-01"),
        ("${art:data,path}", "${art:data,path}"),
        ("/lustre/a b", "/lustre/a b"),
        # Hydra's compact mappings (its docs: foo={a:10,b:20}): a key ends at its first colon
        ("{a:10,b:20}", {"a": 10, "b": 20}),
        ("{a:10,b:{c:30,d:[1,2]}}", {"a": 10, "b": {"c": 30, "d": [1, 2]}}),
        ("[{a:1},{b:x}]", [{"a": 1}, {"b": "x"}]),
        ("{url: http://h:80}", {"url": "http://h:80"}),
        ("{a:'x:y'}", {"a": "x:y"}),
        ("{a:${x.y}}", {"a": "${x.y}"}),
        ("[a:1]", ["a:1"]),
    ],
)
def test_value_parsing(text, expected) -> None:
    value = parse_value(text)
    assert value == expected
    assert type(value) is type(expected)


def test_value_containing_equals(cfg) -> None:
    out = apply_overrides(cfg, ["train.name=x=y", "+train.cmd=a=b=c"])
    assert out.train.name == "x=y"
    assert out.train.cmd == "a=b=c"


def test_interpolation_value_kept_unresolved(cfg) -> None:
    out = apply_overrides(cfg, ["train.name=${art:model,path}", "train.lr=1"])
    assert raw(out)["train"]["name"] == "${art:model,path}"
    assert raw(out)["data"]["path"] == "${art:data,path}"
    assert raw(out)["model"]["ref"] == "${train.iters}"


def test_list_index(cfg) -> None:
    out = apply_overrides(cfg, ["model.layers.1=20"])
    assert list(out.model.layers) == [1, 20, 3]
    with pytest.raises(ConfigError, match="past the end"):
        apply_overrides(cfg, ["++model.layers.7=1"])


def test_overrides_apply_in_order(cfg) -> None:
    out = apply_overrides(cfg, ["train.iters=1", "train.iters=2", "~train.iters", "+train.iters=3"])
    assert out.train.iters == 3


@pytest.mark.parametrize(
    "bad, fragment",
    [
        ("=5", "missing key before '='"),
        ("a..b=1", "invalid key 'a..b'"),
        (".a=1", "invalid key '.a'"),
        ("a.=1", "invalid key 'a.'"),
        ("train.iters", "missing '=VALUE'"),
        ("+=1", "missing key before '='"),
        ("++", "missing key before '='"),
        ("", "empty override"),
        ("a b=1", "invalid key 'a b'"),
    ],
)
def test_malformed_overrides(cfg, bad, fragment) -> None:
    with pytest.raises(ConfigError) as err:
        apply_overrides(cfg, [bad])
    assert fragment in str(err.value)


def test_source_named_in_errors(cfg) -> None:
    with pytest.raises(ConfigError, match=r"in override 'train.iter=5' from pipe.yaml"):
        apply_overrides(cfg, ["train.iter=5"], source="pipe.yaml")


def test_run_env_profile_key_needs_no_plus(cfg, profile_keys) -> None:
    out = apply_overrides(cfg, ["run.env.partition=batch", "run.env.nodes=4"])
    assert raw(out)["run"] == {"env": {"partition": "batch", "nodes": 4}}


def test_run_env_nested_below_profile_key_is_created(cfg, profile_keys) -> None:
    out = apply_overrides(cfg, ["run.env.env_vars.HF_HOME=/cache/hf"])
    assert out.run.env.env_vars.HF_HOME == "/cache/hf"


def test_run_env_unknown_key_suggests_profile_key(cfg, profile_keys) -> None:
    with pytest.raises(ConfigError) as err:
        apply_overrides(cfg, ["run.env.partiton=batch"])
    assert str(err.value) == (
        "unknown key 'run.env.partiton' in override 'run.env.partiton=batch' "
        "(did you mean 'run.env.partition'?)"
    )


def test_run_env_unknown_key_when_yaml_has_run_env(profile_keys) -> None:
    c = OmegaConf.create({"run": {"env": {"nodes": 1}, "data": "x"}})
    with pytest.raises(ConfigError, match=r"did you mean 'run.env.account'\?"):
        apply_overrides(c, ["run.env.acount=a"])
    # An existing non-profile key under run.env can still be set.
    c2 = OmegaConf.create({"run": {"env": {"custom": 1}}})
    assert apply_overrides(c2, ["run.env.custom=2"]).run.env.custom == 2


def test_run_env_plus_allows_any_key(cfg, profile_keys) -> None:
    assert apply_overrides(cfg, ["+run.env.whatever=1"]).run.env.whatever == 1


def test_run_env_delete_of_unset_profile_key_is_noop(cfg, profile_keys) -> None:
    out = apply_overrides(cfg, ["~run.env.partition"])
    assert "run" not in out


def test_run_env_any_key_allowed_without_env_module(cfg, monkeypatch) -> None:
    # While nemo_runspec.env cannot be imported, run.env accepts any key.
    monkeypatch.setitem(sys.modules, "nemo_runspec.env", None)
    out = apply_overrides(cfg, ["run.env.anything=1"])
    assert out.run.env.anything == 1


def test_run_env_with_real_profile_keys(cfg) -> None:
    import nemo_runspec.env as env
    assert "partition" in env.PROFILE_KEYS
    assert apply_overrides(cfg, ["run.env.partition=p"]).run.env.partition == "p"
    with pytest.raises(ConfigError, match=r"did you mean 'run.env.partition'\?"):
        apply_overrides(cfg, ["run.env.partitoin=p"])


def test_parse_override_fields() -> None:
    ov = parse_override("++a.b-c.d=x=1")
    assert (ov.op, ov.key, ov.path, ov.text, ov.value) == ("force", "a.b-c.d", ("a", "b-c", "d"), "x=1", "x=1")
    assert parse_override("~a").has_value is False
    assert parse_override("~a=3").value == 3


@given(st.integers())
def test_int_values_roundtrip(i: int) -> None:
    assert parse_value(str(i)) == i


_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")))


@given(_TEXT, _TEXT)
def test_everything_after_first_equals_is_the_value(left: str, right: str) -> None:
    text = f"{left}={right}"
    ov = parse_override(f"k={text}")
    assert ov.key == "k"
    assert ov.text == text


# --- values that are clearly mistakes vs. legitimate strings -------------------------------------


@pytest.mark.parametrize(
    "value, problem",
    [
        ("[1,2", "unclosed '['"),
        ("[1, [2, 3]", "unclosed '['"),
        ("{a: 1", "unclosed '{'"),
        ("[1]]", "']' without an opening '['"),
        ("{a: [1}", "'}' closes '['"),
        ("'abc", "unclosed single quote"),
        ('"abc', "unclosed double quote"),
        ("[a, 'b]", "unclosed single quote"),
        ('"a"b', "text after the closing quote"),
        ("!!int abc", "ValueError"),
        ("${train.iters", "malformed interpolation '${train.iters'"),
        ("x ${", "malformed interpolation"),
    ],
)
def test_malformed_value_is_a_one_line_error_naming_the_override(cfg, value, problem) -> None:
    with pytest.raises(ConfigError) as err:
        apply_overrides(cfg, [f"train.name={value}"])
    msg = str(err.value)
    assert msg.startswith(f"invalid value in override 'train.name={value}': {problem}")
    assert len(msg.splitlines()) == 1
    assert err.value.key == "train.name"
    with pytest.raises(ConfigError, match="invalid value"):
        parse_value(value)


def test_unclosed_list_message(cfg) -> None:
    c = OmegaConf.create({"train": {"train_iters": 10}})
    with pytest.raises(ConfigError) as err:
        apply_overrides(c, ["train.train_iters=[1,2"])
    assert str(err.value) == (
        "invalid value in override 'train.train_iters=[1,2': unclosed '[' "
        """(to pass it as text, quote it: 'train.train_iters="[1,2"')"""
    )


@pytest.mark.parametrize("value", ["[1,2", "{a: 1", "'abc", '"a"b', "[a, 'b]", "!!int abc", "it's [x"])
def test_the_quoting_hint_gives_back_the_text(cfg, value) -> None:
    """Following the hint (one shell word) sets the value as the string that was typed."""
    import shlex

    try:
        apply_overrides(cfg, [f"train.name={value}"])
    except ConfigError as exc:
        suggestion = exc.hint.split("quote it: ", 1)[1]
        (word,) = shlex.split(suggestion)
    else:  # not a mistake: nothing to follow
        assert value == "it's [x"
        return
    out = apply_overrides(cfg, [word])
    assert out.train.name == value


def test_parse_override_keeps_the_problem_for_apply_time() -> None:
    ov = parse_override("train.iters=[1,2")
    assert (ov.text, ov.value, ov.problem) == ("[1,2", "[1,2", "unclosed '['")
    assert parse_override("train.iters=[1,2]").problem is None


@pytest.mark.parametrize(
    "value",
    [
        "foo bar", "/lustre/a b", "a:b", "a: b: c", "[draft] notes", "{x} y", "x]", "it's", "don't [stop",
        "- a", "{{ x }}", "@at", "`cmd`", "%x", "*x", "foo #bar", "s3://bucket/key", "pkg:nemotron/x",
    ],
)
def test_legitimate_strings_are_kept_verbatim(cfg, value) -> None:
    assert parse_value(value) == value
    assert apply_overrides(cfg, [f"train.name={value}"]).train.name == value


def test_block_list_is_text_but_flow_list_is_a_list() -> None:
    assert parse_value("- a") == "- a"
    assert parse_value("[a]") == ["a"]


_WORD = st.from_regex(r"[a-z][a-z0-9_./:-]{0,12}( [a-z0-9_./-]{1,8})?", fullmatch=True).filter(
    lambda w: w.lower() not in {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf"}
)


@given(_WORD)
def test_plain_strings_are_kept_as_typed(word: str) -> None:
    assert parse_value(word) == word


# In a flow list ``a:`` starts a mapping: list items here have no colon.
_SCALAR = st.one_of(st.integers(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False),
                    _WORD.filter(lambda w: ":" not in w))


def _yaml(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    return repr(value) if isinstance(value, float) else str(value)


@given(st.one_of(_SCALAR, st.lists(_SCALAR, max_size=5)))
def test_typed_values_parse_to_their_type(value) -> None:
    got = parse_value(_yaml(value))
    assert got == value
    assert type(got) is type(value)


@given(_TEXT)
def test_any_value_is_parsed_kept_or_refused_on_one_line(text: str) -> None:
    """Never a traceback: the override applies (to what parse_override parsed) or is a one-line ConfigError."""
    base = OmegaConf.create({"train": {"name": "x"}})
    raw_override = f"train.name={text}"
    try:
        out = apply_overrides(base, [raw_override])
    except ConfigError as exc:
        msg = str(exc)
        assert len(msg.splitlines()) == 1, msg
        assert "train.name" in msg
        return
    ov = parse_override(raw_override)
    assert ov.problem is None
    value = OmegaConf.to_container(out, resolve=False)["train"]["name"]
    assert value == ov.value
    assert isinstance(value, str | int | float | bool | list | dict | None)
    if isinstance(value, str) and text.strip()[:1] not in ("'", '"'):
        assert value == text  # unquoted text is never changed


@pytest.mark.parametrize("value, expected", [
    ("[${x}, 2]", [7, 2]),
    ("{a: ${x}, b: [${x}]}", {"a": 7, "b": [7]}),
    ("[${oc.decode:'[1, 2]'}, 'q ${x} r']", [[1, 2], "q 7 r"]),
])
def test_lists_and_mappings_may_hold_interpolations(value, expected) -> None:
    """Hydra reads ``l=[${x}, 2]`` as a list; YAML alone calls it a syntax error
    (``{`` opens a flow mapping) and it used to become the string ``"[7, 2]"``."""
    out = apply_overrides(OmegaConf.create({"x": 7, "k": "a", "v": None}), [f"v={value}"])
    assert OmegaConf.to_container(out, resolve=True)["v"] == expected


@given(st.lists(st.sampled_from(["${x}", "${oc.env:HOME,${x}}", "1", "'t ${x}'", "[${x}]", "{z: ${x}}"]),
                min_size=1, max_size=5))
def test_interpolations_in_a_list_come_back_verbatim(items: list[str]) -> None:
    """Whatever the mix, each item parses as it would alone, interpolations untouched."""
    assert parse_value("[" + ", ".join(items) + "]") == [parse_value(i) for i in items]


@pytest.mark.parametrize("override, message", [
    ("l.3=9", "index 3 is past the end of 'l' (3 item(s): 0..2)"),
    ("+l.3=9", "index 3 is past the end of 'l' (3 item(s): 0..2)"),
    ("++l.5=9", "index 5 is past the end of 'l'"),
    ("+l.ac=1", "'l' is a list and 'ac' is not an index"),
    ("e.0=1", "'e' is an empty list"),
])
def test_list_index_errors_say_what_is_wrong_and_never_suggest_plus(override, message) -> None:
    with pytest.raises(ConfigError) as info:
        apply_overrides(OmegaConf.create({"l": [1, 2, 3], "e": []}), [override])
    assert str(info.value).startswith(message)
    assert "+" not in (info.value.hint or "") and "=[a,b]" in info.value.hint
