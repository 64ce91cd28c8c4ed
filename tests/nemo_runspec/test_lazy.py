"""Lazy exports (_lazy.lazy_exports): a name not provided or also a submodule is refused, functions stay functions once their modules load."""

from __future__ import annotations

import importlib

import pytest


def test_lazy_exports_refuse_an_unprovided_name(tmp_path, monkeypatch) -> None:
    pkg = tmp_path / "lazypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from nemo_runspec._lazy import lazy_exports\n"
        "__all__ = ['a', 'b']\n"
        "__getattr__, __dir__ = lazy_exports(__name__, {'mod': ['a']})\n"
    )
    (pkg / "mod.py").write_text("a = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match=r"\['b'\]"):
        importlib.import_module("lazypkg")


def test_lazy_exports_refuse_a_name_that_is_also_a_submodule(tmp_path, monkeypatch) -> None:
    """An exported function named like its submodule would be replaced by the module
    once anything imports that submodule: refused at import."""
    pkg = tmp_path / "clashpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from nemo_runspec._lazy import lazy_exports\n"
        "__all__ = ['submit']\n"
        "__getattr__, __dir__ = lazy_exports(__name__, {'submit': ['submit']})\n"
    )
    (pkg / "submit.py").write_text("def submit(): return 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match="submodule"):
        importlib.import_module("clashpkg")


def test_functions_stay_functions_after_their_modules_load() -> None:
    import nemo_runspec.slurm as slurm
    import nemo_runspec.slurm.monitor  # noqa: F401
    import nemo_runspec.slurm.submission  # noqa: F401

    assert callable(slurm.submit) and callable(slurm.follow)
    assert slurm.submit.__module__ == "nemo_runspec.slurm.submission"
