"""The alias table and its meta-path finder (nemo_runspec/_compat.py); that every documented
old path imports the same module object is tests/nemo_runspec/test_public_paths.py."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys

import pytest


def test_the_old_names_import_in_a_fresh_interpreter_without_loading_their_targets_first() -> None:
    """Nothing is imported until an old name is: ``import nemo_runspec`` loads none of the
    moved modules, and ``import nemo_runspec.outcome`` loads the new one."""
    code = ("import sys, nemo_runspec\n"
            "assert 'nemo_runspec.runtime.outcome' not in sys.modules\n"
            "import nemo_runspec.outcome as o\n"
            "assert o is sys.modules['nemo_runspec.runtime.outcome'] is sys.modules['nemo_runspec.outcome']\n"
            "assert o.__name__ == 'nemo_runspec.runtime.outcome'\n"
            # its own spec, not the alias's (importlib sets the alias's while loading)
            "assert o.__spec__.name == 'nemo_runspec.runtime.outcome', o.__spec__\n"
            "import importlib\n"
            "assert importlib.reload(o) is o\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_unknown_and_real_names_are_left_to_the_other_finders() -> None:
    from nemo_runspec._compat import AliasFinder, aliases

    finder = AliasFinder(aliases())
    assert finder.find_spec("nemo_runspec.nosuch") is None
    assert finder.find_spec("nemo_runspec.spec.parser") is None
    assert finder.find_spec("nemo_runspec.job") is None  # was a module, is a package: not intercepted
    assert finder.find_spec("nemo_runspec.outcome") is not None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("nemo_runspec.nosuch")


def test_every_alias_points_at_a_real_module() -> None:
    from nemo_runspec._compat import aliases

    for old, new in aliases().items():
        spec = importlib.util.find_spec(new)
        assert spec is not None and spec.loader is not None and spec.origin, (old, new)
        assert spec.origin.endswith(".py"), (old, new)


def test_no_alias_names_a_module_file_that_exists() -> None:
    """An alias must not hide a real file of the same name (it would win, being first)."""
    from pathlib import Path

    from nemo_runspec._compat import aliases

    root = Path(importlib.import_module("nemo_runspec").__file__).parent
    for old in aliases():
        rel = Path(*old.split(".")[1:])
        assert not (root / f"{rel}.py").exists() and not (root / rel / "__init__.py").exists(), old


def test_install_is_idempotent() -> None:
    from nemo_runspec._compat import AliasFinder, install

    install()
    install()
    assert sum(isinstance(f, AliasFinder) for f in sys.meta_path) == 1
