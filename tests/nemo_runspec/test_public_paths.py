"""Every import path the reference documents keeps working after the package split.

The module table of ``nemo_runspec-package-readme.md`` and the imports its
examples show; the flat names that moved into subpackages are the same module
objects, so patching or isinstance checks through either path agree.
"""

from __future__ import annotations

import importlib

import pytest

# Every module of the reference's table.
DOCUMENTED_MODULES = [
    "_parser", "_models", "config", "config.loader", "config.resolvers", "env", "cli_context",
    "recipe_config", "recipe_typer", "help", "display", "exceptions", "artifact_registry",
    "filesystem", "run", "execution", "packaging", "squash", "pipeline", "step", "evaluator", "utils",
]

MOVED = {
    "nemo_runspec.cli_context": "nemo_runspec.cmdline.context",
    "nemo_runspec.recipe_config": "nemo_runspec.cmdline.recipe_config",
    "nemo_runspec.recipe_typer": "nemo_runspec.cli.recipe_typer",
    "nemo_runspec.help": "nemo_runspec.cli.help",
    "nemo_runspec.display": "nemo_runspec.cli.display",
    "nemo_runspec.artifact_registry": "nemo_runspec.artifacts.registry",
    "nemo_runspec.filesystem": "nemo_runspec.artifacts.filesystem",
    "nemo_runspec._parser": "nemo_runspec.spec.parser",
    "nemo_runspec._models": "nemo_runspec.spec.models",
    "nemo_runspec.exceptions": "nemo_runspec.artifacts.errors",
    "nemo_runspec.run": "nemo_runspec.job.run_config",
    "nemo_runspec.squash": "nemo_runspec.slurm.squash",
    "nemo_runspec.step": "nemo_runspec.pipeline.step",
    "nemo_runspec.evaluator": "nemo_runspec.evaluation.evaluator",
    "nemo_runspec.utils": "nemo_runspec.config.interpolate",
}

#: our own module paths before issue 31 sorted the package into folders by layer (docs/api
#: and docs/dev/architecture.md named them): written out here, not read from _compat's table,
#: so that a path dropped from the table fails
OUR_OLD_PATHS = {
    "nemo_runspec._schema": "nemo_runspec.spec.schema",
    "nemo_runspec._pep723": "nemo_runspec.spec.pep723",
    "nemo_runspec._cmd": "nemo_runspec.spec.cmd",
    "nemo_runspec._toml_lines": "nemo_runspec.spec.toml_lines",
    "nemo_runspec.discovery": "nemo_runspec.spec.discovery",
    "nemo_runspec.ranks": "nemo_runspec.runtime.ranks",
    "nemo_runspec.signals": "nemo_runspec.runtime.signals",
    "nemo_runspec.stale": "nemo_runspec.runtime.stale",
    "nemo_runspec.dotted": "nemo_runspec.runtime.dotted",
    "nemo_runspec.wandb_switch": "nemo_runspec.runtime.wandb_switch",
    "nemo_runspec.outcome": "nemo_runspec.runtime.outcome",
    "nemo_runspec.lognoise": "nemo_runspec.runtime.lognoise",
    "nemo_runspec.ended": "nemo_runspec.runtime.ended",
    "nemo_runspec.lifeline": "nemo_runspec.runtime.lifeline",
    "nemo_runspec.locks": "nemo_runspec.runtime.locks",
    "nemo_runspec.procs": "nemo_runspec.runtime.procs",
    "nemo_runspec.pipeline_records": "nemo_runspec.pipeline.records",
    "nemo_runspec.pipeline_sbatch": "nemo_runspec.pipeline.sbatch",
    "nemo_runspec.stage_selection": "nemo_runspec.pipeline.stage_selection",
    "nemo_runspec.compose": "nemo_runspec.backends.compose",
    "nemo_runspec.eval_tasks": "nemo_runspec.evaluation.tasks",
    "nemo_runspec.eval_launcher": "nemo_runspec.evaluation.launcher",
    "nemo_runspec.git_mounts": "nemo_runspec.env.git_mounts",
    "nemo_runspec.cli.context": "nemo_runspec.cmdline.context",
    "nemo_runspec.cli.recipe_config": "nemo_runspec.cmdline.recipe_config",
    "nemo_runspec.execution.settings": "nemo_runspec.job.settings",
    "nemo_runspec.scales.model": "nemo_runspec.spec.scales",
}

#: modules that became packages: the package exports every public name the module had
#: package that was a module -> {module that defines them now: the old module's names}
BECAME_PACKAGES = {
    "nemo_runspec.job": {"nemo_runspec.job.compiled": ["CompiledJob", "compile_job", "Mode"]},
    "nemo_runspec.pipeline": {
        "nemo_runspec.pipeline.chain": [
            "compile_pipeline", "split_stage_overrides", "pipe_key", "made_by", "graph_lines", "stage_env",
            "new_pipe_id", "run_local", "prepare_stage", "prepare_stages", "submit_slurm", "before_submit",
            "cancel_jobs", "follow_submission"],
        "nemo_runspec.pipeline.records": [
            "StagePlan", "PipeSubmission", "chain_record", "load_record", "pipes_dir", "write_record"],
        "nemo_runspec.pipeline.stage_selection": ["select_stages"],
        "nemo_runspec.pipeline.step": ["Step", "artifact_name", "consumed_artifacts", "published_artifact"],
    },
}

DOCUMENTED_NAMES = [
    ("nemo_runspec", "parse"),
    ("nemo_runspec.recipe_typer", "RecipeTyper"),
    ("nemo_runspec.recipe_typer", "RecipeMeta"),
    ("nemo_runspec.recipe_config", "RecipeConfig"),
    ("nemo_runspec.recipe_config", "parse_recipe_config"),
    ("nemo_runspec.execution", "create_executor"),
    ("nemo_runspec.execution", "execute_local"),
    ("nemo_runspec.execution", "build_env_vars"),
    ("nemo_runspec.config", "parse_config"),
    ("nemo_runspec.config", "build_job_config"),
    ("nemo_runspec.config", "extract_train_config"),
    ("nemo_runspec.config", "save_configs"),
    ("nemo_runspec.exceptions", "ArtifactNotFoundError"),
    ("nemo_runspec.exceptions", "ArtifactVersionNotFoundError"),
    ("nemo_runspec.artifact_registry", "ArtifactRegistry"),
    ("nemo_runspec.filesystem", "ArtifactFileSystem"),
    ("nemo_runspec.execution", "get_startup_commands"),
    ("nemo_runspec.execution", "clone_git_repos_via_tunnel"),
    ("nemo_runspec.squash", "ensure_squashed_image"),
    ("nemo_runspec.utils", "resolve_run_interpolations"),
    ("nemo_runspec.utils", "rewrite_paths_for_remote"),
]


@pytest.mark.parametrize("name", DOCUMENTED_MODULES)
def test_documented_module_imports(name: str) -> None:
    assert importlib.import_module(f"nemo_runspec.{name}").__name__.startswith("nemo_runspec")


@pytest.mark.parametrize("flat, home", sorted({**MOVED, **OUR_OLD_PATHS}.items()))
def test_flat_path_is_the_moved_module(flat: str, home: str) -> None:
    assert importlib.import_module(flat) is importlib.import_module(home)


@pytest.mark.parametrize("flat, home", sorted({**MOVED, **OUR_OLD_PATHS}.items()))
def test_from_import_of_a_moved_module_gives_the_module(flat: str, home: str) -> None:
    """``from nemo_runspec import outcome`` as well as ``import nemo_runspec.outcome``."""
    parent, _, leaf = flat.rpartition(".")
    namespace: dict[str, object] = {}
    exec(f"from {parent} import {leaf}", namespace)  # noqa: S102 - the import statement itself is the subject
    assert namespace[leaf] is importlib.import_module(home)


@pytest.mark.parametrize("package", sorted(BECAME_PACKAGES))
def test_a_module_that_became_a_package_exports_its_names(package: str) -> None:
    face = importlib.import_module(package)
    for home, names in BECAME_PACKAGES[package].items():
        module = importlib.import_module(home)
        for name in names:
            assert getattr(face, name) is getattr(module, name), name
            assert name in face.__all__, name


@pytest.mark.parametrize("module, name", DOCUMENTED_NAMES)
def test_documented_name(module: str, name: str) -> None:
    assert callable(getattr(importlib.import_module(module), name))


def test_templates_ship_with_the_package() -> None:
    from importlib.resources import files

    names = {p.name for p in files("nemo_runspec").joinpath("templates").iterdir()}
    assert any(n.endswith(".sub.j2") for n in names)


@pytest.mark.parametrize("package", ["nemo_runspec.env", "nemo_runspec.execution", "nemo_runspec.slurm",
                                     "nemo_runspec.packaging", "nemo_runspec.config"])
def test_every_exported_name_resolves(package: str) -> None:
    """Packages load their submodules on first use; every name in ``__all__`` must
    still be there, and be the submodule's own object."""
    module = importlib.import_module(package)
    assert module.__all__
    for name in module.__all__:
        value = getattr(module, name)
        assert value is not None, name
        assert name in dir(module)
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018


def test_clone_git_repos_via_tunnel_is_one_function_in_both_places() -> None:
    from nemo_runspec import execution
    from nemo_runspec.env import git_mounts

    assert execution.clone_git_repos_via_tunnel is git_mounts.clone_git_repos_via_tunnel


