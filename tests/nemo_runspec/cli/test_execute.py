"""The body every generated recipe command runs (cli/execute.py): compile, then run here or show;
a real recipe script run as a child process."""

from __future__ import annotations

import json
from pathlib import Path

from nemo_runspec.cli.execute import execute_recipe
from nemo_runspec.job.run_config import RunConfig
from tests.nemo_runspec.backends.test_compose import recipe  # noqa: F401 - the recipe fixture


def _outputs(home: Path) -> list[Path]:
    return sorted(home.rglob("out.json"))


def test_without_an_experiment_the_recipe_runs_here_with_its_overrides(recipe, tmp_path):  # noqa: F811
    code = execute_recipe(recipe, RunConfig(overrides=["greeting=yo"], passthrough=["--x"]))
    assert code == 0
    [out] = _outputs(tmp_path / "home")
    data = json.loads(out.read_text())
    assert "greeting: yo" in data["config"] and data["args"] == ["--x"]


def test_a_dry_run_shows_the_job_and_runs_nothing(recipe, tmp_path, capsys):  # noqa: F811
    assert execute_recipe(recipe, RunConfig(dry_run=True)) == 0
    assert "Dry run" in capsys.readouterr().out
    assert _outputs(tmp_path / "home") == []
