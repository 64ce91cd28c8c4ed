"""Property-based tests for the runspec parser (hypothesis)."""

from __future__ import annotations

import re

import jsonschema  # installed with ray, a core dependency
import tomli_w
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from nemo_runspec import Runspec, RunspecError, parse_text
from nemo_runspec.dollar import ENV_VALUE_PATTERN
from nemo_runspec.spec.schema import runspec_json_schema

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

# ----------------------------------------------------------------- never another exception

FRAGMENTS = [
    "# /// script", "# ///", "# /// pyproject", "# /// script ", "#", "# ", "",
    "# [tool.runspec]", "# [tool.runspec.run]", "# [tool.runspec.resources]",
    "# [tool.runspec.env]", "# [tool.runspec.config]", "# [tool]", "# [[tool.runspec]]",
    '# name = "x"', "# name = 1", '# launch = "python"', '# launch = "mpi"',
    "# nodes = 0", "# nodes = 2", "# gpus_per_node = true", '# schema = "1"', "# schema = 2",
    '# run = { launch = "ray" }', '# env = { A = "1", B = 2 }', "# runspec = 3",
    '# setup = """', '# """', "# a.b.c = 1", '# "quoted key" = "v"', "# [tool.runspec",
    "# = 1", "# x = [1, [2, [3]]]", "#\ttab", "import os", "print('hi')", '"""',
    "# tool.runspec.name = 'dotted'", "# dir = '../c'", "# 'env' = {}",
]

TOMLISH_KEYS = st.sampled_from(
    ["name", "schema", "docs", "image", "setup", "launch", "cmd", "workdir", "dir",
     "default", "format", "nodes", "gpus_per_node", "env", "run", "config", "resources",
     "run.launch", "resources.nodes", "A", "x", '"q k"', "tool.runspec.name"]
)
TOMLISH_VALUES = st.one_of(
    st.integers(-3, 10).map(str),
    st.sampled_from(["true", "false", "1.5", "[]", "{}", '""', '"torchrun"', '"python"',
                     '{ launch = "ray" }', "[1, 2", '"unterminated', "1979-05-27", "inf"]),
    st.text(max_size=12).map(lambda s: '"' + s.replace("\\", "").replace('"', "") + '"'),
    st.text(max_size=8),
)
TOMLISH_LINE = st.one_of(
    st.sampled_from(FRAGMENTS),
    st.builds(lambda k, v: f"# {k} = {v}", TOMLISH_KEYS, TOMLISH_VALUES),
    st.text(max_size=20).map(lambda s: "# " + s),
    st.text(max_size=20),
)


def _check(text: str) -> None:
    try:
        spec = parse_text(text, path="prop.py")
    except RunspecError as exc:
        assert exc.path == "prop.py"
        assert exc.line is None or exc.line >= 1
        assert str(exc).startswith("prop.py")
        assert "\n" not in str(exc)
    else:
        assert isinstance(spec, Runspec)


@SETTINGS
@given(st.text())
def test_arbitrary_text_gives_runspec_or_runspec_error(text):
    _check(text)


@SETTINGS
@given(
    st.lists(TOMLISH_LINE, max_size=25),
    st.sampled_from(["\n", "\r\n", "\r"]),
    st.booleans(),
)
def test_block_fragments_give_runspec_or_runspec_error(lines, newline, bom):
    _check(("\ufeff" if bom else "") + newline.join(lines))


@SETTINGS
@given(st.lists(TOMLISH_LINE, max_size=15), st.sampled_from(["\n", "\r\n"]))
def test_fragments_inside_a_real_block(lines, newline):
    text = newline.join(["# /// script", "# [tool.runspec]", *lines, "# ///", ""])
    _check(text)
    if not any(line.startswith("# /// script") for line in lines):
        try:
            parse_text(text, path="prop.py")
        except RunspecError as exc:
            # Every error inside a closed block points inside that block.
            assert exc.line is not None
            assert 1 <= exc.line <= len(lines) + 3


# ----------------------------------------------------------------- round trip

NON_EMPTY = st.text(
    st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30
).filter(lambda s: s.strip() != "")
ENV_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True)
# An image reference ends up on the srun line: only its own characters are valid
# (nemo_runspec.script_values "image"; other text is tested to be refused).
IMAGE = st.from_regex(r"[A-Za-z0-9_.:/@#+%=~-]{1,30}", fullmatch=True)


@st.composite
def runspec_tables(draw):
    table: dict = {"name": draw(NON_EMPTY)}
    if draw(st.booleans()):
        table["schema"] = draw(st.sampled_from(["1", 1]))
    for key in ("docs", "setup"):
        if draw(st.booleans()):
            table[key] = draw(NON_EMPTY)
    if draw(st.booleans()):
        table["image"] = draw(IMAGE)
    run = {}
    if draw(st.booleans()):
        run["launch"] = draw(st.sampled_from(["torchrun", "ray", "direct", "python"]))
    for key in ("cmd", "workdir"):
        if draw(st.booleans()):
            run[key] = draw(NON_EMPTY)
    if run:
        table["run"] = run
    config = {}
    for key in ("dir", "default", "format"):
        if draw(st.booleans()):
            config[key] = draw(NON_EMPTY)
    if config:
        table["config"] = config
    resources = {}
    if draw(st.booleans()):
        resources["nodes"] = draw(st.integers(1, 2**31))
    if draw(st.booleans()):
        resources["gpus_per_node"] = draw(st.integers(0, 2**31))
    if resources:
        table["resources"] = resources
    if draw(st.booleans()):
        # "$" included: the schema holds env values to the one rule for $ as the parser does
        # (dollar.ENV_VALUE_PATTERN), and a "$" in a value is common
        table["env"] = draw(st.dictionaries(ENV_NAME, st.text(
            st.sampled_from("aZ0_ ${}:-,.\\\"'`()") | st.characters(blacklist_categories=("Cs",)), max_size=20),
            max_size=4))
    return table


def _render(table: dict, *, before: list[str] = (), extra: dict | None = None) -> str:
    doc = {"tool": {"runspec": table}}
    if extra:
        doc.update(extra)
    toml = tomli_w.dumps(doc)
    lines = [("# " + ln) if ln else "#" for ln in toml.rstrip("\n").split("\n")]
    return "\n".join([*before, "# /// script", *lines, "# ///", "import os", ""])


@SETTINGS
@given(runspec_tables(), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_round_trip(table, newline, bom):
    # env values the one rule for $ refuses are the agreement test's (below), not this one's
    assume(all(re.search(ENV_VALUE_PATTERN, v) for v in table.get("env", {}).values()))
    text = _render(table, extra={"dependencies": ["numpy"], "requires-python": ">=3.10"})
    text = ("\ufeff" if bom else "") + text.replace("\n", newline)
    spec = parse_text(text, path="/abs/recipe/train.py")
    run = table.get("run", {})
    config = table.get("config", {})
    resources = table.get("resources", {})
    assert spec.name == table["name"]
    assert spec.schema == "1"
    assert spec.docs == table.get("docs")
    assert spec.image == table.get("image")
    assert spec.setup == table.get("setup")
    expected_launch = {"python": "direct"}.get(run.get("launch"), run.get("launch", "torchrun"))
    assert spec.run.launch == expected_launch
    assert spec.run.cmd == run.get("cmd")
    assert spec.run.workdir == run.get("workdir")
    assert spec.config.dir == config.get("dir", "./config")
    assert spec.config.default == config.get("default", "default")
    assert spec.config.format == config.get("format", "omegaconf")
    assert spec.resources.nodes == resources.get("nodes", 1)
    assert spec.resources.gpus_per_node == resources.get("gpus_per_node", 8)
    assert dict(spec.env) == table.get("env", {})
    assert str(spec.script_path) == "/abs/recipe/train.py"


# ----------------------------------------------------------------- schema agreement

VALIDATOR = jsonschema.Draft202012Validator(runspec_json_schema())

# JSON has one number type (1.0 == 1 for JSON Schema) while TOML tells them apart
# and the parser rejects floats where integers belong; integral floats are out of scope.
ANY_VALUE = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 3),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()),
    st.sampled_from(["", " ", "1", "2", "torchrun", "python", "mpi", "x"]),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.sampled_from(["a", "B_1"]),
                                                         st.integers(), max_size=2),
)
ALL_PATHS = [
    ("name",), ("schema",), ("docs",), ("image",), ("setup",), ("run",), ("run", "launch"),
    ("run", "cmd"), ("config",), ("config", "dir"), ("resources",), ("resources", "nodes"),
    ("resources", "gpus_per_node"), ("env",), ("env", "A"), ("env", "9x"), ("imgae",),
    ("run", "lanch"),
]


@SETTINGS
@given(runspec_tables(), st.sampled_from(ALL_PATHS), ANY_VALUE, st.booleans())
def test_schema_and_parser_agree(table, path, value, mutate):
    if mutate:
        if value is None:  # TOML has no null: drop the key instead
            node = table
            for part in path[:-1]:
                node = node.get(part) if isinstance(node.get(part), dict) else None
                if node is None:
                    break
            if node is not None:
                node.pop(path[-1], None)
        else:
            node = table
            for part in path[:-1]:
                if not isinstance(node.get(part), dict):
                    node[part] = {}
                node = node[part]
            node[path[-1]] = value
    assume(_tomlable(table))
    schema_ok = VALIDATOR.is_valid(table)
    try:
        parse_text(_render(table), path="agree.py")
        parser_ok = True
    except RunspecError:
        parser_ok = False
    assert schema_ok == parser_ok, table


def _tomlable(table: dict) -> bool:
    try:
        tomli_w.dumps({"t": table})
    except (TypeError, ValueError):
        return False
    return True


# ----------------------------------------------------------------- line numbers shift with the file

@SETTINGS
@given(st.lists(st.sampled_from(["", "import os", "x = 1", "# comment"]), max_size=30),
       st.sampled_from(["nodes", "gpus_per_node"]), st.integers(-5, 0))
def test_error_line_follows_the_key(before, key, bad):
    if key == "gpus_per_node":
        bad -= 1  # 0 GPUs is valid (CPU-only stage)
    text = _render({"name": "n", "resources": {key: bad}}, before=before)
    try:
        parse_text(text, path="shift.py")
    except RunspecError as exc:
        lines = text.split("\n")
        expected = next(i for i, ln in enumerate(lines, 1) if ln.startswith(f"# {key} ="))
        assert exc.line == expected
        assert exc.key == f"resources.{key}"
    else:
        raise AssertionError("a non-positive count must be rejected")
