"""Unit tests for the runspec parser (PEP 723 block, validation, errors, cache, schema)."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
from pathlib import Path

import jsonschema  # installed with ray, a core dependency
import pytest
import tomli_w

from nemo_runspec import Runspec, RunspecError, parse, parse_text
from nemo_runspec.spec.parser import clear_cache, collect_errors
from nemo_runspec.spec.schema import runspec_json_schema
from tests.import_probes import imported_after


def block(*toml_lines: str, block_type: str = "script") -> str:
    """Render TOML lines as a PEP 723 comment block."""
    body = "".join(("#\n" if not ln else f"# {ln}\n") for ln in toml_lines)
    return f"# /// {block_type}\n{body}# ///\n"


def runspec_block(*lines: str, name: str = "demo/recipe") -> str:
    return block("[tool.runspec]", f'name = "{name}"', *lines)


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based line number of the nth line containing ``needle``."""
    seen = 0
    for number, line in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        if needle in line:
            seen += 1
            if seen == nth:
                return number
    raise AssertionError(f"{needle!r} not in text")


def err(text: str, path: str = "recipe.py") -> RunspecError:
    with pytest.raises(RunspecError) as info:
        parse_text(text, path=path)
    return info.value


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


# --------------------------------------------------------------------------- happy path

def test_minimal_block_gets_every_v1_default(tmp_path):
    spec = parse_text(runspec_block(), path=tmp_path / "train.py")
    assert spec.name == "demo/recipe"
    assert spec.schema == "1"
    assert (spec.docs, spec.image, spec.setup) == (None, None, None)
    assert (spec.run.launch, spec.run.cmd, spec.run.workdir) == ("torchrun", None, None)
    assert (spec.config.dir, spec.config.default, spec.config.format) == (
        "./config", "default", "omegaconf",
    )
    assert (spec.resources.nodes, spec.resources.gpus_per_node) == (1, 8)
    assert dict(spec.env) == {}
    assert spec.script_path == tmp_path / "train.py"
    assert spec.config_dir == tmp_path / "config"


def test_all_fields_are_read(tmp_path):
    text = "#!/usr/bin/env python\n" + block(
        'requires-python = ">=3.10"',
        'dependencies = ["numpy"]',
        "",
        "[tool.runspec]",
        "schema = 1",
        'docs = "https://docs.example/pretrain"',
        'name = "nano3/pretrain"',
        'image = "nvcr.io/nvidia/nemo:25.11"',
        'setup = "pip install -e ."',
        "[tool.runspec.run]",
        'launch = "ray"',
        'cmd = "python {script} --config {config}"',
        'workdir = "/opt/nemo"',
        "[tool.runspec.config]",
        'dir = "../shared-config"',
        'default = "tiny"',
        'format = "omegaconf"',
        "[tool.runspec.resources]",
        "nodes = 4",
        "gpus_per_node = 2",
        "[tool.runspec.env]",
        'NCCL_DEBUG = "INFO"',
        'HF_HOME = "/cache/hf"',
        "[tool.other]",
        "whatever = [1, 2]",
    ) + "print('hi')\n"
    spec = parse_text(text, path=tmp_path / "stage" / "train.py")
    assert spec.schema == "1"
    assert spec.docs == "https://docs.example/pretrain"
    assert spec.name == "nano3/pretrain"
    assert spec.image == "nvcr.io/nvidia/nemo:25.11"
    assert spec.setup == "pip install -e ."
    assert spec.run.launch == "ray"
    assert spec.run.cmd == "python {script} --config {config}"
    assert spec.run.workdir == "/opt/nemo"
    assert spec.config.default == "tiny"
    assert spec.resources.nodes == 4 and spec.resources.gpus_per_node == 2
    assert dict(spec.env) == {"NCCL_DEBUG": "INFO", "HF_HOME": "/cache/hf"}
    assert spec.config_dir == tmp_path / "shared-config"


def test_inline_tables_and_dotted_keys_are_accepted():
    spec = parse_text(runspec_block('run = { launch = "direct" }', "resources.nodes = 3"))
    assert spec.run.launch == "direct"
    assert spec.resources.nodes == 3


def test_python_is_a_synonym_of_direct():
    spec = parse_text(runspec_block("[tool.runspec.run]", 'launch = "python"'))
    assert spec.run.launch == "direct"


@pytest.mark.parametrize("launch", ["torchrun", "ray", "direct"])
def test_each_launch_value_is_kept(launch):
    spec = parse_text(runspec_block("[tool.runspec.run]", f'launch = "{launch}"'))
    assert spec.run.launch == launch


def test_zero_gpus_per_node_is_a_cpu_only_stage():
    spec = parse_text(runspec_block("[tool.runspec.resources]", "gpus_per_node = 0"))
    assert spec.resources.gpus_per_node == 0


def test_integer_schema_one_is_normalised_to_string():
    assert parse_text(runspec_block("schema = 1")).schema == "1"


# --------------------------------------------------------------------------- the model

def test_runspec_is_frozen_and_env_read_only():
    spec = parse_text(runspec_block("[tool.runspec.env]", 'A = "1"'))
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.run.launch = "ray"  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.env["A"] = "2"  # type: ignore[index]
    assert spec.env["A"] == "1"


def test_runspec_hashes_pickles_and_serialises(tmp_path):
    spec = parse_text(runspec_block("[tool.runspec.env]", 'X = "y"'), path=tmp_path / "t.py")
    assert hash(spec) == hash(pickle.loads(pickle.dumps(spec)))
    assert pickle.loads(pickle.dumps(spec)) == spec
    data = json.loads(json.dumps(spec.to_dict()))
    assert data["name"] == "demo/recipe"
    assert data["env"] == {"X": "y"}
    assert data["run"]["launch"] == "torchrun"
    assert data["resources"] == {"nodes": 1, "gpus_per_node": 8}
    assert Path(data["config_dir"]) == tmp_path / "config"
    assert Path(data["script_path"]) == tmp_path / "t.py"


def test_runspec_can_be_built_directly_with_a_plain_dict_env(tmp_path):
    spec = Runspec(name="x", script_path=tmp_path / "a.py", env={"K": "v"})
    with pytest.raises(TypeError):
        spec.env["K"] = "w"  # type: ignore[index]
    assert spec.config_dir == tmp_path / "config"


# --------------------------------------------------------------------------- paths

def test_config_dir_is_relative_to_the_script_not_the_cwd(tmp_path, monkeypatch):
    script = tmp_path / "recipes" / "stage0" / "train.py"
    script.parent.mkdir(parents=True)
    script.write_text(runspec_block("[tool.runspec.config]", 'dir = "./conf"'))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    spec = parse(os.path.relpath(script, elsewhere))
    assert spec.script_path == script.resolve()
    assert spec.script_path.is_absolute()
    assert spec.config_dir == script.resolve().parent / "conf"


def test_symlinked_script_resolves_to_the_real_file(tmp_path):
    real = tmp_path / "real" / "train.py"
    real.parent.mkdir()
    real.write_text(runspec_block())
    link = tmp_path / "link.py"
    link.symlink_to(real)
    spec = parse(link)
    assert spec.script_path == real.resolve()
    assert spec.config_dir == real.resolve().parent / "config"


def test_parse_text_relative_path_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = parse_text(runspec_block(), path="sub/train.py")
    assert spec.script_path == Path(os.getcwd()) / "sub" / "train.py"
    assert spec.config_dir == Path(os.getcwd()) / "sub" / "config"


# --------------------------------------------------------------------------- PEP 723 block

def test_bom_is_stripped():
    spec = parse_text("\ufeff" + runspec_block())
    assert spec.name == "demo/recipe"


def test_crlf_and_lone_cr_line_endings():
    text = runspec_block("[tool.runspec.resources]", "nodes = 2")
    assert parse_text(text.replace("\n", "\r\n")).resources.nodes == 2
    assert parse_text(text.replace("\n", "\r")).resources.nodes == 2


def test_crlf_error_line_numbers_match_the_file():
    text = "import os\n\n" + runspec_block("[tool.runspec.resources]", "nodes = 0")
    e = err(text.replace("\n", "\r\n"))
    assert e.line == line_of(text, "nodes = 0")
    assert e.key == "resources.nodes"


def test_bare_hash_lines_are_empty_content():
    text = "# /// script\n#\n# [tool.runspec]\n#\n# name = \"a\"\n#\n# ///\n"
    assert parse_text(text).name == "a"


def test_no_block_is_an_error():
    e = err("print('no metadata')\n")
    assert "no '# /// script' block" in str(e)
    assert e.line is None
    assert str(e).startswith("recipe.py: ")


def test_unclosed_block_names_the_opener_line():
    text = "import os\n# /// script\n# [tool.runspec]\n# name = \"a\"\nprint(1)\n"
    e = err(text)
    opener = line_of(text, "# /// script")
    assert f"block opened at line {opener} is never closed with '# ///'" in str(e)
    assert e.line == opener


def test_two_script_blocks_name_both_lines():
    first = runspec_block()
    text = first + "\nx = 1\n\n" + runspec_block(name="second")
    e = err(text)
    a, b = line_of(text, "# /// script", 1), line_of(text, "# /// script", 2)
    assert str(a) in e.problem and str(b) in e.problem
    assert e.problem == f"two '# /// script' blocks, at lines {a} and {b}"


def test_two_adjacent_script_blocks_are_two_blocks():
    text = runspec_block() + runspec_block(name="second")
    e = err(text)
    a, b = line_of(text, "# /// script", 1), line_of(text, "# /// script", 2)
    assert b == a + 4  # truly adjacent: no line between the closer and the next opener
    assert f"at lines {a} and {b}" in e.problem


def test_other_block_types_are_ignored():
    text = (
        block("[project]", 'name = "x"', "[tool.runspec]", "nam = 1", block_type="pyproject")
        + block('dependencies = ["a"]', "[tool.runspec]", 'name = "ok"')
    )
    assert parse_text(text).name == "ok"


def test_runspec_only_in_another_block_type_is_not_found():
    e = err(block("[tool.runspec]", 'name = "x"', block_type="pyproject"))
    assert "no '# /// script' block" in e.problem


def test_adjacent_block_of_another_type_is_ignored():
    text = runspec_block() + block("[tool.x]", "y = 1", block_type="pyproject")
    assert parse_text(text).name == "demo/recipe"


def test_comment_after_closer_without_blank_line_is_not_content():
    text = runspec_block() + "# Copyright header continues here\nimport os\n"
    assert parse_text(text).name == "demo/recipe"


def test_script_block_without_runspec_table():
    text = "\n" + block('dependencies = ["x"]', "[tool.other]", "a = 1")
    e = err(text)
    opener = line_of(text, "# /// script")
    assert e.problem == f"'# /// script' block at line {opener} has no [tool.runspec] table"
    assert e.line == opener
    assert "[tool.runspec]" in (e.hint or "")


def test_runspec_that_is_not_a_table():
    text = block("[tool]", "runspec = 3")
    e = err(text)
    assert "'tool.runspec' must be a table" in e.problem
    assert e.line == line_of(text, "runspec = 3")


def test_toml_syntax_error_maps_to_the_script_line():
    text = "import os\n\n\n" + runspec_block("image = nvcr.io/nemo", "[tool.runspec.run]")
    e = err(text)
    assert e.problem.startswith("invalid TOML in '# /// script' block")
    assert e.line == line_of(text, "image = nvcr")
    assert "at line" not in e.problem  # TOML-internal position replaced by the script's


def test_unterminated_string_error_points_into_the_block():
    text = runspec_block('setup = """never closed')
    e = err(text)
    assert e.problem.startswith("invalid TOML")
    first, closer = line_of(text, "# /// script"), line_of(text, "# ///", 2)
    assert first < e.line < closer


# --------------------------------------------------------------------------- validation

def test_missing_name():
    text = block("[tool.runspec]", 'image = "x"')
    e = err(text)
    assert e.problem == "missing required key 'name' in [tool.runspec]"
    assert e.line == line_of(text, "[tool.runspec]")
    assert "name =" in (e.hint or "")


@pytest.mark.parametrize(
    ("line", "expect"),
    [('name = ""', "must not be empty"), ('name = "   "', "must not be empty"),
     ("name = 3", "must be a string, got integer 3"), ("name = true", "boolean true")],
)
def test_bad_name(line, expect):
    text = block("[tool.runspec]", line)
    e = err(text)
    assert expect in e.problem
    assert e.key == "name"
    assert e.line == line_of(text, line)


def test_unknown_top_level_key_with_suggestion():
    text = runspec_block('imgae = "x"')
    e = err(text)
    assert e.problem == "unknown key 'imgae' in [tool.runspec]"
    assert e.key == "imgae"
    assert e.line == line_of(text, "imgae")
    assert "did you mean 'image'?" in (e.hint or "")
    assert str(e) == f"recipe.py:{e.line}: {e.problem} ({e.hint})"


def test_misspelt_name_reports_the_typo_not_a_missing_name():
    text = block("[tool.runspec]", 'nmae = "x"')
    errors = _collect(text)
    assert [x.key for x in errors] == ["nmae"]
    assert "did you mean 'name'?" in (errors[0].hint or "")


@pytest.mark.parametrize(
    ("table", "typo", "meant"),
    [("run", "lanch", "launch"), ("config", "defualt", "default"),
     ("resources", "gpus_pernode", "gpus_per_node")],
)
def test_unknown_key_in_sub_tables(table, typo, meant):
    text = runspec_block(f"[tool.runspec.{table}]", f'{typo} = "x"')
    e = err(text)
    assert e.key == f"{table}.{typo}"
    assert e.problem == f"unknown key '{table}.{typo}' in [tool.runspec.{table}]"
    assert e.line == line_of(text, typo)
    assert f"did you mean '{meant}'?" in (e.hint or "")


def test_unknown_dotted_key_points_at_its_line():
    text = runspec_block('docs = "d"', 'run.lanch = "ray"')
    e = err(text)
    assert e.key == "run.lanch"
    assert e.line == line_of(text, "run.lanch")


def test_unknown_key_in_inline_table_points_at_its_line():
    text = runspec_block('docs = "d"', 'resources = { nodes = 2, gpu = 1 }')
    e = err(text)
    assert e.key == "resources.gpu"
    assert e.line == line_of(text, "resources = {")


def test_line_map_skips_multiline_strings():
    text = runspec_block(
        'setup = """',
        "nodes = 0",
        '"""',
        "[tool.runspec.resources]",
        "nodes = 0",
    )
    e = err(text)
    assert e.key == "resources.nodes"
    assert e.line == line_of(text, "nodes = 0", 2)


@pytest.mark.parametrize("value", ['"mpirun"', '"Torchrun"', "3"])
def test_invalid_launch(value):
    text = runspec_block("[tool.runspec.run]", f"launch = {value}")
    e = err(text)
    assert e.key == "run.launch"
    assert e.line == line_of(text, "launch =")
    if value.startswith('"'):
        assert e.problem == f"invalid run.launch {value.strip(chr(34))!r}"
        for choice in ("torchrun", "ray", "direct"):
            assert choice in (e.hint or "")
    else:
        assert "must be a string" in e.problem


def test_launch_hint_suggests_the_close_value():
    e = err(runspec_block("[tool.runspec.run]", 'launch = "torchrn"'))
    assert "did you mean 'torchrun'?" in (e.hint or "")


@pytest.mark.parametrize(("value", "expect"), [('"2"', "unsupported runspec schema '2'"),
                                               ("2", "unsupported runspec schema 2"),
                                               ("true", "must be a string"),
                                               ("1.0", "must be a string")])
def test_bad_schema(value, expect):
    text = runspec_block(f"schema = {value}")
    e = err(text)
    assert expect in e.problem
    assert e.key == "schema"
    assert e.line == line_of(text, "schema =")


@pytest.mark.parametrize(
    ("key", "value", "expect"),
    [("nodes", "0", "must be at least 1, got 0"),
     ("nodes", "-3", "must be at least 1, got -3"),
     ("gpus_per_node", "-1", "must be at least 0, got -1"),
     ("nodes", "true", "must be an integer, got boolean true"),
     ("gpus_per_node", '"8"', "must be an integer, got string '8'"),
     ("nodes", "2.0", "must be an integer, got float 2.0")],
)
def test_bad_integers(key, value, expect):
    text = runspec_block("[tool.runspec.resources]", f"{key} = {value}")
    e = err(text)
    assert e.key == f"resources.{key}"
    assert e.problem == f"'resources.{key}' {expect}"
    assert e.line == line_of(text, f"{key} = {value}")


@pytest.mark.parametrize("field", ["image", "docs"])
def test_optional_strings_must_be_strings(field):
    text = runspec_block(f"{field} = [1]")
    e = err(text)
    assert e.key == field
    assert e.problem == f"'{field}' must be a string, got an array"


def test_top_level_setup_is_a_string_description():
    e = err(runspec_block("setup = 7"))
    assert e.key == "setup" and e.problem == "'setup' must be a string, got integer 7"
    e = err(runspec_block('setup = ["make"]'))  # commands belong to run.setup
    assert e.key == "setup" and "[tool.runspec.run] setup = [...]" in str(e)


@pytest.mark.parametrize("table", ["run", "config", "resources", "env"])
def test_sub_tables_must_be_tables(table):
    text = runspec_block(f'{table} = "oops"')
    e = err(text)
    assert e.key == table
    assert e.problem == f"'{table}' must be a table, got string 'oops'"
    assert e.line == line_of(text, f"{table} =")


def test_env_value_must_be_a_string():
    text = runspec_block("[tool.runspec.env]", "OMP_NUM_THREADS = 4")
    e = err(text)
    assert e.key == "env.OMP_NUM_THREADS"
    assert e.line == line_of(text, "OMP_NUM_THREADS")
    assert e.hint == 'quote it: "4"'


def test_env_name_must_be_a_valid_variable_name():
    text = runspec_block("[tool.runspec.env]", '"1BAD-NAME" = "x"')
    e = err(text)
    assert e.key == "env.1BAD-NAME"
    assert "invalid environment variable name" in e.problem
    assert e.line == line_of(text, "1BAD-NAME")


def test_nested_table_in_env_is_rejected():
    e = err(runspec_block("[tool.runspec.env.sub]", 'A = "b"'))
    assert e.key == "env.sub"
    assert "must be a string, got a table" in e.problem


def test_errors_are_value_errors_with_path_line_format(tmp_path):
    path = tmp_path / "bad.py"
    text = runspec_block("[tool.runspec.resources]", "nodes = 0")
    with pytest.raises(ValueError) as info:
        parse_text(text, path=path)
    e = info.value
    assert isinstance(e, RunspecError)
    assert str(e).startswith(f"{path}:{line_of(text, 'nodes = 0')}: ")


def _collect(text: str) -> list[RunspecError]:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "r.py"
        p.write_text(text)
        return collect_errors(p)


def test_collect_errors_reports_every_problem_in_line_order():
    text = runspec_block(
        'imgae = "x"',
        "[tool.runspec.run]",
        'launch = "mpi"',
        "[tool.runspec.resources]",
        "nodes = 0",
    )
    errors = _collect(text)
    assert [e.key for e in errors] == ["imgae", "run.launch", "resources.nodes"]
    assert [e.line for e in errors] == [
        line_of(text, "imgae"), line_of(text, "launch ="), line_of(text, "nodes = 0")
    ]


def test_collect_errors_on_valid_file_is_empty():
    assert _collect(runspec_block()) == []


# --------------------------------------------------------------------------- parse(): files and cache

def test_parse_missing_file_and_directory(tmp_path):
    with pytest.raises(RunspecError) as info:
        parse(tmp_path / "nope.py")
    assert "script not found" in str(info.value)
    with pytest.raises(RunspecError) as info:
        parse(tmp_path)
    assert "directory" in str(info.value)


def test_parse_invalid_utf8(tmp_path):
    p = tmp_path / "bin.py"
    p.write_bytes(b"x = 1\n\xff\xfe\n")
    with pytest.raises(RunspecError) as info:
        parse(p)
    assert "UTF-8" in info.value.problem
    assert info.value.line == 2


def test_parse_caches_and_sees_changes(tmp_path):
    p = tmp_path / "train.py"
    p.write_text(runspec_block(name="one"))
    first = parse(p)
    assert parse(p) is first
    assert parse(str(p)) is first

    p.write_text(runspec_block(name="two-longer"))  # new size
    second = parse(p)
    assert second.name == "two-longer"

    # Same size, only the mtime differs: must still be re-parsed.
    p.write_text(runspec_block(name="three-long"))
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert parse(p).name == "three-long"


def test_cache_clear_forces_a_reparse(tmp_path):
    p = tmp_path / "train.py"
    p.write_text(runspec_block())
    first = parse(p)
    parse.cache_clear()
    assert parse(p) is not first
    again = parse(p)
    clear_cache()
    assert parse(p) is not again


def test_invalid_file_is_not_cached(tmp_path):
    p = tmp_path / "train.py"
    p.write_text(runspec_block("[tool.runspec.resources]", "nodes = 0"))
    for _ in range(2):
        with pytest.raises(RunspecError):
            parse(p)


def test_parser_import_stays_light():
    out = imported_after(
        "import nemo_runspec\nnemo_runspec.parse_text\nimport nemo_runspec.spec.schema",
        ("omegaconf", "pydantic", "rich", "nemo_run", "ray", "torch", "wandb", "typer"),
    )
    assert out.stdout.strip() == ""


# --------------------------------------------------------------------------- JSON schema

def _validator():
    schema = runspec_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


EXAMPLES_VALID = [
    {"name": "a"},
    {"schema": "1", "name": "nano3/pretrain", "image": "img", "run": {"launch": "python"}},
    {"schema": 1, "name": "x", "config": {"dir": "./c", "default": "d", "format": "omegaconf"},
     "resources": {"nodes": 2, "gpus_per_node": 4}, "env": {"A_B": "1"}},
]
EXAMPLES_INVALID = [
    {},
    {"name": ""},
    {"name": "a", "imgae": "x"},
    {"name": "a", "schema": "2"},
    {"name": "a", "schema": True},
    {"name": "a", "run": {"launch": "mpirun"}},
    {"name": "a", "run": {"lanch": "ray"}},
    {"name": "a", "resources": {"nodes": 0}},
    {"name": "a", "resources": {"gpus_per_node": -1}},
    {"name": "a", "resources": {"nodes": True}},
    {"name": "a", "env": {"A": 1}},
    {"name": "a", "env": {"1A": "x"}},
]


def test_schema_shape():
    schema = runspec_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["name"]
    props = schema["properties"]
    assert set(props) == {"schema", "docs", "name", "image", "setup", "run", "config",
                          "resources", "env", "scales"}
    assert props["run"]["properties"]["launch"]["default"] == "torchrun"
    assert set(props["run"]["properties"]["launch"]["enum"]) == {"torchrun", "ray", "direct",
                                                                 "python"}
    assert props["resources"]["properties"]["gpus_per_node"]["default"] == 8
    for sub in ("run", "config", "resources"):
        assert props[sub]["additionalProperties"] is False
    for name, prop in props.items():
        assert prop.get("description"), name
    runspec_json_schema()["properties"].clear()
    assert runspec_json_schema()["properties"], "callers must get a fresh copy"


@pytest.mark.parametrize("table", EXAMPLES_VALID)
def test_valid_examples_pass_schema_and_parser(table):
    assert list(_validator().iter_errors(table)) == []
    parse_text(_render(table))


@pytest.mark.parametrize("table", EXAMPLES_INVALID)
def test_invalid_examples_fail_schema_and_parser(table):
    assert list(_validator().iter_errors(table)) != []
    with pytest.raises(RunspecError):
        parse_text(_render(table))


def _render(table: dict) -> str:
    toml = tomli_w.dumps({"tool": {"runspec": table}})
    return block(*toml.splitlines())


@pytest.mark.parametrize("image", ["nvcr.io/x:1; touch /tmp/p", "img $(id)", "a b", "x`id`"])
def test_image_with_shell_syntax_is_an_error(image):
    text = runspec_block(f'image = "{image}"')
    e = err(text)
    assert "image" in str(e) and e.line == line_of(text, "image =")


@pytest.mark.parametrize("image", ["nvcr.io/nvidia/nemo:25.11.nemotron_3_nano", "docker://ubuntu:22.04",
                                   "nvcr.io#nvidia/pytorch:24.01-py3", "/lustre/images/x.sqsh"])
def test_ordinary_images_parse(image):
    assert parse_text(runspec_block(f'image = "{image}"')).image == image


# --------------------------------------------------------------------------- gpus_per_node = "gpu"


def test_deep_nesting_in_the_block_is_one_line_at_its_line():
    deep = "x = " + "[" * 5000 + "1" + "]" * 5000
    text = runspec_block(deep)
    e = err(text)
    assert "nested too deeply" in e.problem and e.line == line_of(text, "x = [")
