"""Error lines from the one TOML key -> line scanner (env.toml and runspec blocks)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from nemo_runspec import RunspecError, parse_text
from nemo_runspec.env import load_env_profile
from nemo_runspec.errors import EnvFileError
from nemo_runspec.spec.toml_lines import deepest_line, line_map


def test_env_toml_line_after_a_unicode_line_separator_in_a_value(tmp_path):
    # U+2028 is valid inside a TOML string; tomllib does not count it as a line break.
    path = tmp_path / "env.toml"
    path.write_text('[dev]\ndescription = "a\u2028b"\nnodes = "x"\n', encoding="utf-8")
    with pytest.raises(EnvFileError) as info:
        load_env_profile("dev", path)
    assert info.value.line == 3


def test_runspec_line_after_an_escaped_triple_quote_in_a_multiline_string():
    text = "\n".join([
        "# /// script",
        "# [tool.runspec]",
        '# name = "demo/recipe"',
        '# docs = """a\\"""b"""',
        "# resources.nodes = 0",
        "# ///",
        "",
    ])
    with pytest.raises(RunspecError) as info:
        parse_text(text, "recipe.py")
    assert info.value.line == 5


# Every construct the scanner must step over, each key on a known line (valid TOML:
# tomllib reads it). Brackets, quotes, '#' and '=' inside strings and comments,
# multi-line strings closed by up to two extra quotes or after an escaped quote, arrays
# spanning lines, dotted and quoted keys with blanks around the dots, array-of-tables.
DOCUMENT = Path(__file__).with_name("toml_lines_document.toml").read_text()

EXPECTED = {
    ("title",): 2, ("indented",): 3, ("quoted key",): 4, ('esc"aped',): 5, ("literal key",): 6,
    ("a",): 7, ("a", "b"): 7, ("a", "b", "c"): 7, ("a", "d.e"): 8, ("bare-key_1",): 9, ("empty",): 10,
    ("table",): 12, ("table", "x"): 13, ("table", "q"): 14, ("table", "q", "r"): 14,
    ("spaced",): 16, ("spaced", "header"): 16, ("spaced", "header", "y"): 17, ("spaced", "header", "z"): 22,
    ("aot",): 24, ("aot", "n"): 27, ("aot", "sub"): 28, ("aot", "sub", "m"): 29, ("aot", "sub", "after"): 32,
    ("aot", "sub", "lit"): 33, ("aot", "sub", "b"): 35, ("aot", "sub", "esc"): 36, ("aot", "sub", "c"): 37,
    ("aot", "sub", "two"): 38, ("aot", "sub", "d"): 39,
}


def test_line_map_of_every_construct():
    """A table's first header and a key's last assignment give their line; a dotted key's
    prefixes get the line of their first mention."""
    tomllib.loads(DOCUMENT)  # the scanner's input is valid TOML
    assert line_map(DOCUMENT) == EXPECTED


@pytest.mark.parametrize("text, expected", [
    ('k = "a\\\\"\nj = 1\n', {("k",): 1, ("j",): 2}),           # a string ending in an escaped backslash
    ("k = 'a\\'\nj = 1\n", {("k",): 1, ("j",): 2}),              # a literal string: no escapes
    ('k = """\na\\\\"""\nj = 1\n', {("k",): 1, ("j",): 3}),      # a multi-line string closed after \\
    ("k = [\n  '''\n]''',\n]\nj = 1\n", {("k",): 1, ("j",): 5}),  # a multi-line literal inside an array
    ("k = { a = [1, 2] }\nj = [\n{ x = 1 },\n]\n", {("k",): 1, ("j",): 2}),  # inner keys are not keys here
    ('[t]\n"x\\u0041" = 1\n', {("t",): 1, ("t", "xA"): 2}),      # escapes in quoted keys are decoded
    ("\t k\t.\tl = 1\n", {("k",): 1, ("k", "l"): 1}),             # tabs around dots
    ("[[a.b]]\n[[a.b]]\nc = 1\n", {("a",): 1, ("a", "b"): 1, ("a", "b", "c"): 3}),
])
def test_line_map_small_cases(text, expected):
    tomllib.loads(text)
    assert line_map(text) == expected


@pytest.mark.parametrize("text, line", [
    ("", 1),                                          # no lines at all: line 1
    ("a = 1\n", 1),
    ("a = 1\nb = [[1]]\nc = {d = {e = {f = 1}}}\n", 3),  # braces count like brackets
    ("a = [[[1]]]\nb = [[[2]]]\n", 1),                 # a tie: the first
    ("a = 1\nb = [[[[{x = 1}]]]]\nc = [1]\n", 2),
])
def test_deepest_line(text, line):
    assert deepest_line(text) == line


# Each case: what the scanner must get right for the key after it to be found on its line
# (a wrong step swallows it into a multi-line value, or reads a continuation line as a key).
J = {("k",): 1}
SCANNER_CASES = {
    # quoted and literal keys
    '"\\"x" = 1\n': {('"x',): 1},                     # an escaped quote first in a quoted key
    '"" = 1\n': {("",): 1},                           # empty quoted key
    '"a\\\\" = 1\n': {("a\\",): 1},                   # a key ending in an escaped backslash
    '"x\\u0041".y = 1\n': {("xA",): 1, ("xA", "y"): 1},  # escapes decoded, a dot right after
    '"a".b = 1\n': {("a",): 1, ("a", "b"): 1},
    "'a'.'b' = 1\n": {("a",): 1, ("a", "b"): 1},
    "'' = 1\n": {("",): 1},
    "'a'.b = 1\n": {("a",): 1, ("a", "b"): 1},
    '"a=b" = [\n1,\n]\nj = 1\n': {("a=b",): 1, ("j",): 4},  # '=' inside the key
    '"k"= [\n1]\nj = 1\n': {("k",): 1, ("j",): 3},    # no blank before '='
    "k =[\n1]\nj = 1\n": {**J, ("j",): 3},            # no blank after '='
    # strings on one line
    'k = ["=",\n1]\nj = 1\n': {**J, ("j",): 3},         # '=' inside a value
    'k = ["", "["]\nj = 1\n': {**J, ("j",): 2},         # an empty string
    'k = ["a]", "b["]\nj = 1\n': {**J, ("j",): 2},
    'k = ["\\"[", 1]\nj = 1\n': {**J, ("j",): 2},       # an escaped quote
    'k = ["\\\\", "["]\nj = 1\n': {**J, ("j",): 2},     # an escaped backslash before the quote
    "k = ['\\', \"[\"]\nj = 1\n": {**J, ("j",): 2},     # a literal string has no escapes
    'k = ["a"]\nj = 1\n': {**J, ("j",): 2},
    "k = 1 # [ \" '\nj = 2\n": {**J, ("j",): 2},        # a comment after a value
    # multi-line strings
    'k = """"""\nj = 1\n': {**J, ("j",): 2},          # empty
    'k = [\n"""a"""]\nj = 1\n': {**J, ("j",): 3},     # a bracket right after the closer
    'k = [\n"""a""""]\nj = 1\n': {**J, ("j",): 3},    # one extra quote closes with it
    'k = """\n\\"""\n"""\nj = 1\n': {**J, ("j",): 4},  # an escaped quote first on a line
    'k = """\nx\\"""y\n"""\nj = 1\n': {**J, ("j",): 4},
    'k = """\nx\\""""\nj = 1\n': {**J, ("j",): 3},     # an escaped quote right before the closer
    'k = """\nx\\\\\\\\"""\nj = 1\n': {**J, ("j",): 3},  # two escaped backslashes, then the closer
    'k = """\n\\""" \\\n"""\nj = 1\n': {**J, ("j",): 4},  # a line-ending backslash after it
    'k = ["""a""", [1, """b"""],\n2]\nj = 1\n': {**J, ("j",): 3},
    'k = ["""\nx\\"""y""", [1, """z"""],\n2]\nj = 1\n': {**J, ("j",): 4},
    # bare keys of inline tables are part of the value
    "k = { X = 1 }\nj = 1\n": {**J, ("j",): 2},
    "k = [\n{ X = 1 }, 2,\n3]\nj = 1\n": {**J, ("j",): 4},
    # indentation
    "  [t]\n  x = 1\n": {("t",): 1, ("t", "x"): 2},
}


@pytest.mark.parametrize("text", list(SCANNER_CASES))
def test_line_map_scanner_steps(text):
    tomllib.loads(text)  # every case is valid TOML
    assert line_map(text) == SCANNER_CASES[text]
