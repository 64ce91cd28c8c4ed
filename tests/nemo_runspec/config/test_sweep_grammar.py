"""The sweep grammar (config/sweep_grammar.py): which override values are sweeps, their values, and malformed sweeps as one-line errors."""

from __future__ import annotations

import pytest

from nemo_runspec.config.overrides import parse_value
from nemo_runspec.config.sweep_grammar import is_sweep, parse_sweep
from nemo_runspec.errors import ConfigError


@pytest.mark.parametrize(("text", "values"), [
    ("1,2,3", [1, 2, 3]),
    (" 1 , 2 ", [1, 2]),
    ("choice(a, b)", ["a", "b"]),
    ("choice('a,b', c)", ["a,b", "c"]),
    ("'a,b',c", ["a,b", "c"]),
    ('"a,b","c,d"', ["a,b", "c,d"]),
    ("range(3)", [0, 1, 2]),
    ("range(1,10,3)", [1, 4, 7]),
    ("range(10,0,-4)", [10, 6, 2]),
    ("range(start=2,stop=4)", [2, 3]),
    ("range(0,1,0.25)", [0.0, 0.25, 0.5, 0.75]),
    ("[1,2],[3,4]", [[1, 2], [3, 4]]),
    ("[a,[b,c]],[d]", [["a", ["b", "c"]], ["d"]]),
    ("sort(3,1,2)", [1, 2, 3]),
    ("sort(3,10,2,reverse=true)", [10, 3, 2]),
    ("sort(range(3))", [0, 1, 2]),
    ("a\\,b,c", ["a,b", "c"]),
    ("{a: 1},{a: 2}", [{"a": 1}, {"a": 2}]),
    # Hydra's documented examples (website/docs/advanced/override_grammar/*.md, 1.3)
    ("range(0,10,3.3)", [0.0, 3.3, 6.6, 9.9]),
    ("range(-5,step=-1)", [0, -1, -2, -3, -4]),
    ("range(5,step=2)", [0, 2, 4]),
    ("sort(1,3,2,reverse=true)", [3, 2, 1]),
    ("sort(sweep=choice(b,a,c))", ["a", "b", "c"]),
    ("sort(choice(1,2,3),reverse=true)", [3, 2, 1]),
    ("{a:10, b:20},{c:30,d:40}", [{"a": 10, "b": 20}, {"c": 30, "d": 40}]),
    # float steps are added in decimal, as typed: no 0.30000000000000004, stop excluded
    ("range(0,1,0.1)", [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]),
    ("range(0,1.1,0.1)", [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]),
    ("range(1e-4,5e-4,1e-4)", [1e-4, 2e-4, 3e-4, 4e-4]),
    # Hydra's escapes: the characters themselves, as text
    ("a\\[1\\],b", ["a[1]", "b"]),
    ("a\\(x\\),b", ["a(x)", "b"]),
    ("x\\ y,z", ["x y", "z"]),
    ("k\\=v,w", ["k=v", "w"]),
    # Hydra's quoted strings: \' is a quote; other backslashes are themselves
    ("'it\\'s',b", ["it's", "b"]),
    ('"x\\ny",z', ["x\\ny", "z"]),
    # casts around a sweep cast each value
    ("float(range(1,3))", [1.0, 2.0]),
    ("int(1.5,2.7,true)", [1, 2, 1]),
    ("str(1,2)", ["1", "2"]),
    ("str(range(2))", ["0", "1"]),
    ("bool(0,1)", [False, True]),
])
def test_sweep_values(text, values):
    sweep = parse_sweep(text, where="t")
    assert sweep is not None and [parse_value(v) for v in sweep.values] == values
    assert all(type(parse_value(v)) is type(e) for v, e in zip(sweep.values, values, strict=True))
    assert is_sweep(text)


def test_sort_of_a_list_is_one_value_the_sorted_list():
    assert [parse_value(v) for v in parse_sweep("sort([3,1,2])", where="t").values] == [[1, 2, 3]]
    assert [parse_value(v) for v in parse_sweep("sort(list=[a,c,b], reverse=true)", where="t").values] == [
        ["c", "b", "a"]]


def test_a_cast_of_one_value_is_not_a_sweep():
    assert parse_sweep("int(5)", where="t") is None and not is_sweep("int(5)")


@pytest.mark.parametrize("text", ["1", "'a,b'", '"a,b"', "a\\,b", "[1,2]", "{a: 1, b: 2}", "${x,y}",
                                  "${oc.env:X,default}", "x", "", "path/a=b"])
def test_single_values_are_not_sweeps(text):
    assert parse_sweep(text, where="t") is None
    assert not is_sweep(text)


@pytest.mark.parametrize(("text", "words"), [
    ("range(1,1)", "range() is empty"),
    ("range(0,5,0)", "step must not be 0"),
    ("range(a,5)", "must be a number"),
    ("range()", "1 to 3 numbers"),
    ("range(1,2,3,4)", "1 to 3 numbers"),
    ("range(stepp=1,stop=2)", "no argument 'stepp'"),
    ("choice()", "choice() of nothing"),
    ("interval(0,1)", "interval() is not supported"),
    ("shuffle(1,2)", "shuffle() is not supported"),
    ("1,,2", "an empty value"),
    ("1,'a", "unclosed quote"),
    ("1,[2", "unclosed '['"),
    ("choice(choice(a,b))", "choice() inside a list of values"),
    ("choice(a,b),c", "choice() inside a list of values"),
    ("1,range(3)", "range() inside a list of values"),
    ("range(0,1e9)", "range() gives 1000000000 values"),
    ("range(1,stop=3,start=0)", "range() got start twice"),
    ("rnage(1,3)", "unknown function rnage() (did you mean range()?"),
    ("chioce(a,b)", "unknown function chioce() (did you mean choice()?"),
    ("int(a,b)", "int() cannot cast 'a'"),
    ("sort()", "sort() of nothing"),
])
def test_malformed_sweeps_are_one_line_errors(text, words):
    with pytest.raises(ConfigError) as err:
        parse_sweep(text, where=f"override 'k={text}'")
    assert words in str(err.value)
    assert f"override 'k={text}'" in str(err.value)
    assert "\n" not in str(err.value)
