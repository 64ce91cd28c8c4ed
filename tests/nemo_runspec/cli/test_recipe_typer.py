"""Lazy command groups of RecipeTyper (cli/recipe_typer.py): groups and commands load on lookup; a module that fails to import is listed and reported."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import typer
from typer.testing import CliRunner

from nemo_runspec.cli.recipe_typer import RecipeTyper
from nemo_runspec.errors import ExecutionError


def _lazy_app(tmp_path: Path, monkeypatch) -> RecipeTyper:
    (tmp_path / "lazy_sub_ok.py").write_text(textwrap.dedent("""
        import typer
        app = typer.Typer(help="A group loaded on lookup.")
        @app.command()
        def one():
            '''The first command.'''
            print("one ran")
        @app.command()
        def two():
            '''The second command.'''
        def hello(name: str = "x"):
            '''Say hello.'''
            print(f"hello {name}")
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_sub_ok", raising=False)
    app = RecipeTyper(name="top", help="Top.")
    app.add_lazy_typer("sub", "lazy_sub_ok", rich_help_panel="Loaded later")
    app.add_lazy_command("hello", "lazy_sub_ok", "hello")
    app.add_lazy_typer("gone", "lazy_no_such_module_xyz")
    app.add_lazy_command("missing", "lazy_no_such_module_xyz", "f")
    return app


def test_lazy_groups_and_commands_load_on_lookup(tmp_path, monkeypatch):
    app = _lazy_app(tmp_path, monkeypatch)
    runner = CliRunner()
    result = runner.invoke(app, ["sub", "one"])
    assert result.exit_code == 0 and "one ran" in result.stdout
    result = runner.invoke(app, ["hello", "--name", "you"])
    assert result.exit_code == 0 and "hello you" in result.stdout

    monkeypatch.delitem(sys.modules, "lazy_sub_ok")
    typer.main.get_command(app)
    assert "lazy_sub_ok" not in sys.modules  # registering and converting import nothing
    result = runner.invoke(app, ["sub", "--help"])
    assert result.exit_code == 0
    assert "A group loaded on lookup." in result.stdout and "The second command." in result.stdout


def test_a_lazy_module_that_fails_to_import_is_listed_and_reported(tmp_path, monkeypatch):
    app = _lazy_app(tmp_path, monkeypatch)
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    for name in ("gone", "missing"):
        row = next(line for line in lines if f"│ {name} " in line)
        assert "failed to load" in row and "lazy_no_such_module_xyz" in row
    assert any("Loaded later" in line for line in lines)  # the panel of a group not yet loaded
    for name in ("gone", "missing"):
        result = CliRunner().invoke(app, [name])
        assert isinstance(result.exception, ExecutionError)
        assert "failed to load" in str(result.exception) and "lazy_no_such_module_xyz" in str(result.exception)
