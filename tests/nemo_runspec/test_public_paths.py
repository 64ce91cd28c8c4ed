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


@pytest.mark.parametrize("flat, home", sorted(MOVED.items()))
def test_flat_path_is_the_moved_module(flat: str, home: str) -> None:
    assert importlib.import_module(flat) is importlib.import_module(home)


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
    from nemo_runspec import execution, git_mounts

    assert execution.clone_git_repos_via_tunnel is git_mounts.clone_git_repos_via_tunnel


