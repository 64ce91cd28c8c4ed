"""nemo_runspec.spec.discovery: which scripts are recipes, which dirs are searched and in
what order, what is skipped, how deep, and what a name found twice says."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nemo_runspec.errors import RunspecError
from nemo_runspec.spec import discovery as d


def _script(path: Path, name: str, *, block: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = block if block is not None else f'# [tool.runspec]\n# schema = "1"\n# name = "{name}"\n'
    path.write_text(f"# /// script\n{body}# ///\nprint('hi')\n")
    return path


@pytest.mark.parametrize("block", [
    '# [tool.runspec]\n# name = "team/a"\n',
    '# [tool]\n# runspec.schema = "1"\n# runspec.name = "team/a"\n',
    '# tool.runspec.name = "team/a"\n',
    '# tool = { runspec = { name = "team/a" } }\n',
    '# requires-python = ">=3.11"\n#\n# [tool.runspec]   # a comment after the header\n# name = "team/a"\n',
    '# [tool . runspec]\n# name = "team/a"\n',
])
def test_any_valid_toml_spelling_of_the_runspec_table_is_a_recipe(tmp_path, block):
    assert d.read_name(_script(tmp_path / "a.py", "", block=block)) == "team/a"


@pytest.mark.parametrize("text", [
    "print('no block')\n",
    '# /// script\n# dependencies = ["requests"]\n# ///\n',  # another tool's PEP 723 block
    '# /// script\n# [tool.uv]\n# exclude-newer = "2025-01-01T00:00:00Z"\n# ///\n',
    '# /// script\n# dependencies = [\n# ///\n',  # broken, but not ours
])
def test_scripts_without_a_runspec_table_are_not_recipes(tmp_path, text):
    (tmp_path / "s.py").write_text(text)
    assert d.read_name(tmp_path / "s.py") is None


def test_a_broken_runspec_block_is_one_line_naming_file_and_line(tmp_path):
    path = tmp_path / "b.py"
    path.write_text('"""doc"""\n# /// script\n# [tool.runspec]\n# name = \n# ///\n')
    with pytest.raises(RunspecError) as ei:
        d.read_name(path)
    assert str(ei.value).startswith(f"{path}:2: invalid TOML in the script block") and "\n" not in str(ei.value)


def test_env_var_dirs_split_expand_and_name_their_origin(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    value = os.pathsep.join(["~/a", "", str(tmp_path / "b"), "  "])
    dirs = d.env_var_recipe_dirs(value)
    assert [(r.path, r.origin) for r in dirs] == [(tmp_path / "a", "$NEMOTRON_RECIPE_DIRS"),
                                                 (tmp_path / "b", "$NEMOTRON_RECIPE_DIRS")]
    assert d.env_var_recipe_dirs(None) == [] and d.env_var_recipe_dirs("") == []


def test_cli_search_order_flag_then_env_var_then_env_toml_then_package(tmp_path, monkeypatch):
    from nemo_runspec.cmdline.context import GlobalContext
    from nemotron.cli.discovered import RECIPE_DIRS_VAR, recipe_dirs
    from nemotron.recipes import RECIPES_DIR

    (tmp_path / "env.toml").write_text('[cli]\nrecipe_dirs = ["from-toml"]\n')
    monkeypatch.setenv(RECIPE_DIRS_VAR, str(tmp_path / "from-var"))
    dirs, problems = recipe_dirs(GlobalContext(recipe_dirs=[str(tmp_path / "from-flag")],
                                               env_file=str(tmp_path / "env.toml")))
    assert problems == []
    assert [r.path for r in dirs] == [tmp_path / "from-flag", tmp_path / "from-var", tmp_path / "from-toml",
                                      RECIPES_DIR]
    assert [r.origin for r in dirs][:2] == ["--recipe-dir", "$NEMOTRON_RECIPE_DIRS"]
    assert dirs[2].origin == f"{tmp_path / 'env.toml'}:2 [cli] recipe_dirs" and dirs[3].origin == "package"


def test_the_first_dir_wins_a_name_and_the_others_are_shadowed(tmp_path):
    first = _script(tmp_path / "one" / "x.py", "team/x")
    second = _script(tmp_path / "two" / "deep" / "x.py", "team/x")
    found = d.discover([d.RecipeDir(tmp_path / "one", "--recipe-dir"),
                        d.RecipeDir(tmp_path / "two", "$NEMOTRON_RECIPE_DIRS"),
                        d.RecipeDir(tmp_path / "one", "again")])  # a dir named twice is searched once
    assert found.recipes["team/x"].path == first and found.recipes["team/x"].origin == "--recipe-dir"
    assert [r.path for r in found.shadowed["team/x"]] == [second] and found.problems == []
    (line,) = found.duplicate_problems("team/x")
    assert line == (f"{second}: recipe name 'team/x' is taken by {first} (--recipe-dir): "
                    "`nemotron team x` runs that one (rename one of them)")


def test_hidden_private_and_tool_dirs_are_skipped(tmp_path):
    for sub in (".git", ".venv", "__pycache__", "_private", "node_modules", "site-packages", "venv", "build",
                "dist"):
        _script(tmp_path / sub / "r.py", f"skipped/{sub.strip('._-')}")
    _script(tmp_path / "_hidden.py", "skipped/underscore-file")
    _script(tmp_path / "ok" / "r.py", "team/ok")
    found = d.discover([d.RecipeDir(tmp_path, "t")])
    assert sorted(found.recipes) == ["team/ok"]


def test_depth_limit(tmp_path):
    deepest = tmp_path.joinpath(*[f"d{i}" for i in range(1, d.MAX_DEPTH + 1)])
    _script(deepest / "in.py", "team/in")
    _script(deepest / "too-deep" / "out.py", "team/out")
    found = d.discover([d.RecipeDir(tmp_path, "t")])
    assert sorted(found.recipes) == ["team/in"]


def test_a_missing_dir_is_one_problem_naming_who_named_it(tmp_path):
    found = d.discover([d.RecipeDir(tmp_path / "nope", "$NEMOTRON_RECIPE_DIRS")])
    assert found.problems == [f"$NEMOTRON_RECIPE_DIRS: recipe dir {tmp_path / 'nope'} does not exist "
                              "(create it, or stop naming it there)"]
