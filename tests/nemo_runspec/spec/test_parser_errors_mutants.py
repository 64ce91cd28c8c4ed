"""Every runspec error checked whole (docs/runspec.md: "parse errors name file:line"):
problem, path, script line, key and hint, as mutation testing found them unstated
(docs/dev/mutation.md); and the values the parser reads back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nemo_runspec.errors import RunspecError
from nemo_runspec.spec import parser as _parser
from nemo_runspec.spec.parser import collect_errors, parse, parse_text


def block(*lines: str, pre: str = "") -> str:
    return pre + "# /// script\n# [tool.runspec]\n" + "".join(f"# {ln}\n" for ln in lines) + "# ///\n"


def error(text: str) -> RunspecError:
    with pytest.raises(RunspecError) as info:
        parse_text(text, "s.py")
    assert info.value.path == "s.py"
    return info.value


ERRORS: dict[str, tuple[str, str, int | None, str | None, str | None]] = {
    "tool is not a table": (
        "# /// script\n# tool = 1\n# ///\n",
        "'# /// script' block at line 1 has no [tool.runspec] table", 1, None,
        "add '# [tool.runspec]' with at least a name inside the block"),
    "tool.runspec is not a table": (
        "# /// script\n# [tool]\n# runspec = 3\n# ///\n",
        "'tool.runspec' must be a table, got integer 3", 3, None, "write it as [tool.runspec]"),
    "invalid TOML": (
        block('name = "x"', 'docs = "a'),
        "invalid TOML in '# /// script' block: Illegal character '\\n'", 4, None, "column 12"),
    "invalid TOML at the end": (
        block('name = "x"', "docs = ["),
        "invalid TOML in '# /// script' block: Invalid value at the end of the block", 4, None, None),
    "nested too deeply": (
        block('name = "x"', "docs = " + "[" * 3000 + "]" * 3000, 'image = "x"'),
        "invalid TOML in '# /// script' block: values nested too deeply", 4, None,
        "a runspec value needs a few levels of nesting at most"),
    "tables nested too deeply": (
        block('name = "x"', "docs = [[1]]", "env = " + "{a = " * 3000 + "1" + "}" * 3000),
        "invalid TOML in '# /// script' block: values nested too deeply", 5, None,
        "a runspec value needs a few levels of nesting at most"),
    "invalid TOML at the end of a one-line block": (
        "# /// script\n# a = [\n# ///\n",
        "invalid TOML in '# /// script' block: Invalid value at the end of the block", 2, None, None),
    "top-level setup as commands": (
        block('name = "x"', 'setup = ["a"]'),
        "top-level 'setup' is a description of what the image provides (as in the reference) and is "
        "never run", 4, "setup", "put commands in [tool.runspec.run] setup = [...]"),
    "invalid image": (
        block('name = "x"', 'image = "a b"'),
        "invalid image: 'a b' cannot be used in the batch script (because of ' '); allowed: an image "
        "reference (registry/name:tag, docker://..., nvcr.io#..., /path/x.sqsh)", 4, "image",
        "an image reference has no spaces or shell characters"),
    "schema not a string": (
        block('name = "x"', "schema = true"),
        "'schema' must be a string, got boolean true", 4, "schema", 'use schema = "1"'),
    "unsupported schema": (
        block('name = "x"', 'schema = "9"'),
        "unsupported runspec schema '9'", 4, "schema", "supported: '1'"),
    "missing name": (
        block('docs = "d"'),
        "missing required key 'name' in [tool.runspec]", 2, None, 'add e.g. name = "nano3/pretrain"'),
    "unknown placeholder": (
        block('name = "x"', "[tool.runspec.run]", 'cmd = "python {scirpt}"'),
        "unknown placeholder {scirpt} in run.cmd", 5, "run.cmd",
        "did you mean 'script'?; valid: args, config, job_dir, script; write {{ and }} for literal braces"),
    "run.cmd not a string": (
        block('name = "x"', "[tool.runspec.run]", "cmd = 5"),
        "'run.cmd' must be a string, got integer 5", 5, "run.cmd", 'quote it: "5"'),
    "run.workdir not a string": (
        block('name = "x"', "[tool.runspec.run]", "workdir = 5"),
        "'run.workdir' must be a string, got integer 5", 5, "run.workdir", 'quote it: "5"'),
    "run.setup not strings": (
        block('name = "x"', "[tool.runspec.run]", "setup = [1]"),
        "'run.setup' must be shell commands (a string or a list of strings), got [1]", 5, "run.setup",
        'e.g. setup = ["pip install -e .", "export X=1"]'),
    "run.setup empty list": (
        block('name = "x"', "[tool.runspec.run]", "setup = []"),
        "'run.setup' must be shell commands (a string or a list of strings), got []", 5, "run.setup",
        'e.g. setup = ["pip install -e .", "export X=1"]'),
    "run.setup blank command": (
        block('name = "x"', "[tool.runspec.run]", 'setup = ["a", " "]'),
        "'run.setup' must be shell commands (a string or a list of strings), got ['a', ' ']", 5,
        "run.setup", 'e.g. setup = ["pip install -e .", "export X=1"]'),
    "config.dir": (
        block('name = "x"', "[tool.runspec.config]", "dir = 1"),
        "'config.dir' must be a string, got integer 1", 5, "config.dir", 'quote it: "1"'),
    "config.default": (
        block('name = "x"', "[tool.runspec.config]", "default = 2"),
        "'config.default' must be a string, got integer 2", 5, "config.default", 'quote it: "2"'),
    "config.format": (
        block('name = "x"', "[tool.runspec.config]", "format = 3"),
        "'config.format' must be a string, got integer 3", 5, "config.format", 'quote it: "3"'),
    "env name": (
        block('name = "x"', "[tool.runspec.env]", '1X = "a"'),
        "invalid environment variable name '1X'", 5, "env.1X",
        "use letters, digits and '_', not starting with a digit"),
    "env value a number": (
        block('name = "x"', "[tool.runspec.env]", "X = 1"),
        "'env.X' must be a string, got integer 1", 5, "env.X", 'quote it: "1"'),
    "env value an array": (
        block('name = "x"', "[tool.runspec.env]", "X = [1]"),
        "'env.X' must be a string, got an array", 5, "env.X", "environment values are strings"),
    "count": (
        block('name = "x"', "[tool.runspec.resources]", 'nodes = "2"'),
        "'resources.nodes' must be an integer, got string '2'", 5, "resources.nodes",
        "write a whole number without quotes, e.g. 1"),
    "empty string": (
        block('name = " "'),
        "'name' must not be empty", 3, "name", "remove the key to use the default"),
    "not a table": (
        block('name = "x"', "run = 1"),
        "'run' must be a table, got integer 1", 4, "run", "write it as [tool.runspec.run]"),
    "unknown key": (
        block('name = "x"', "nmae = 1"),
        "unknown key 'nmae' in [tool.runspec]", 4, "nmae",
        "did you mean 'name'?; valid: config, docs, env, image, name, resources, run, scales, schema, setup"),
    "launch": (
        block('name = "x"', "[tool.runspec.run]", 'launch = "torchrn"'),
        "invalid run.launch 'torchrn'", 5, "run.launch",
        "did you mean 'torchrun'?; valid: direct, python, ray, torchrun"),
    "two blocks": (
        block('name = "x"') + block('name = "y"'),
        "two '# /// script' blocks, at lines 1 and 5", 5, None,
        "PEP 723 allows one block per type; merge them into one"),
    "unclosed": (
        "# /// script\n# [tool.runspec]\n",
        "'# /// script' block opened at line 1 is never closed with '# ///'", 1, None,
        "end the block with a line that is exactly '# ///'"),
    "no block": (
        "print(1)\n", "no '# /// script' block", None, None,
        "add a PEP 723 block: '# /// script', '# [tool.runspec]', '# name = \"...\"', '# ///' at the top "
        "of the script"),
    "a float where a string belongs": (
        block('name = "x"', "docs = 1.5"),
        "'docs' must be a string, got float 1.5", 4, "docs", 'quote it: "1.5"'),
    "a date where a string belongs": (
        block('name = "x"', "docs = 1979-05-27"),
        "'docs' must be a string, got date", 4, "docs", None),
    "an array where a string belongs": (
        block('name = "x"', "docs = [1]"),
        "'docs' must be a string, got an array", 4, "docs", None),
    "an empty script block": (
        "# /// script\n# ///\n", "'# /// script' block at line 1 has no [tool.runspec] table", 1, None,
        "add '# [tool.runspec]' with at least a name inside the block"),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_whole(case: str) -> None:
    text, problem, line, key, hint = ERRORS[case]
    err = error(text)
    assert (err.problem, err.line, err.key, err.hint) == (problem, line, key, hint)


# ------------------------------------------------------------------ where the block is


@pytest.mark.parametrize("pre", [
    "#!/usr/bin/env python\n",
    "# /// not a type!\n",           # a '# /// ' line that opens nothing
    "# /// other\n",                 # an unclosed block of another type, right before ours
    "import os\n\n",
    "#!/usr/bin/env python\n# /// not a type!\n",   # the same, not on the first line
    "#!/usr/bin/env python\n# /// other\n",
])
def test_the_block_is_found_after_other_lines(pre: str) -> None:
    assert parse_text(block('name = "x"', pre=pre), "s.py").name == "x"


def test_a_block_ending_the_file_without_a_newline() -> None:
    assert parse_text('# /// script\n# [tool.runspec]\n# name = "x"\n# ///', "s.py").name == "x"


# ------------------------------------------------------------------ values read back


def test_run_setup_and_config_values() -> None:
    spec = parse_text(block('name = "x"', "[tool.runspec.run]", 'setup = ["a", "b"]',
                            "[tool.runspec.config]", 'dir = "cfgs"', 'default = "tiny"', 'format = "json"'),
                      "s.py")
    assert spec.run.setup == ("a", "b")
    assert (spec.config.dir, spec.config.default, spec.config.format) == ("cfgs", "tiny", "json")
    assert spec.schema == "1"


@pytest.mark.parametrize(("toml", "setup"), [
    ('"echo X  \\n"', ("echo X  ",)),     # only the trailing newline goes
    ('"echo X\\n"', ("echo X",)),
    ('"\\necho a\\necho b\\n"', ("\necho a\necho b",)),
])
def test_run_setup_as_one_string(toml: str, setup: tuple[str, ...]) -> None:
    spec = parse_text(block('name = "x"', "[tool.runspec.run]", f"setup = {toml}"), "s.py")
    assert spec.run.setup == setup


# ------------------------------------------------------------------ files


def test_file_errors_whole(tmp_path: Path) -> None:
    def err(path: Path) -> RunspecError:
        with pytest.raises(RunspecError) as info:
            parse(path)
        assert info.value.path == str(path)
        assert collect_errors(path)[0].problem == info.value.problem
        return info.value

    assert err(tmp_path / "nope.py").problem == "script not found"
    assert err(tmp_path).problem == "script is a directory, not a regular file"
    (tmp_path / "f").write_text("")
    assert err(tmp_path / "f" / "s.py").problem == "cannot read script: Not a directory"
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"\nx = 1\n# \xff\n")
    e = err(bad)
    assert (e.problem, e.line) == ("script is not valid UTF-8", 3)


def test_errors_of_a_file_name_the_path_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("s.py").write_text(block('name = " "'))
    with pytest.raises(RunspecError) as info:
        parse("s.py")
    assert info.value.path == "s.py"
    assert collect_errors("s.py")[0].path == "s.py"


def test_collect_errors_sorts_by_line(tmp_path: Path) -> None:
    path = tmp_path / "s.py"
    path.write_text(block('name = "x"', "schema = true", "nmae = 1"))  # checked: nmae, then schema
    assert [e.key for e in collect_errors(path)] == ["schema", "nmae"]


def test_parse_text_needs_text() -> None:
    with pytest.raises(TypeError) as info:
        parse_text(b"x")  # type: ignore[arg-type]
    assert str(info.value) == "parse_text() needs str, got bytes"
    with pytest.raises(RunspecError) as err:
        parse_text("print(1)\n")
    assert err.value.path == "<string>"


def test_the_cache_is_bounded_and_drops_the_oldest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_parser, "_CACHE_MAX", 2)
    monkeypatch.setattr(_parser, "_CACHE", {})
    paths = []
    for i in range(3):
        p = tmp_path / f"s{i}.py"
        p.write_text(block(f'name = "n{i}"'))
        paths.append(p)
        parse(p)
    assert len(_parser._CACHE) == 2
    assert sorted(key[0] for key in _parser._CACHE) == sorted(os.path.realpath(p) for p in paths[1:])
