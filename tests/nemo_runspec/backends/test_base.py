"""Every built-in backend implements the Backend protocol as the registry names it, and
loading them stays cheap (no nemo-run, Ray, torch or cloud SDK)."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

from nemo_runspec.backends import base
from nemo_runspec.env import registry


@pytest.mark.parametrize("name", registry.builtin_names())
def test_each_builtin_implements_the_protocol(name: str) -> None:
    cls = registry.backend_class(name)
    assert cls.name == name
    for flag in ("chains", "waits_for_jobs", "sweeps"):
        assert isinstance(getattr(cls, flag), bool), flag
    for method in ("prepare", "render", "submit"):
        theirs = inspect.signature(getattr(cls, method))
        ours = inspect.signature(getattr(base.Backend, method))
        assert list(theirs.parameters) == list(ours.parameters), (name, method)
        assert [p.kind for p in theirs.parameters.values()] == [p.kind for p in ours.parameters.values()]


def test_what_each_builtin_can_do() -> None:
    flags = {n: tuple(getattr(registry.backend_class(n), f) for f in ("chains", "waits_for_jobs", "sweeps"))
             for n in registry.builtin_names()}
    assert flags == {"local": (True, False, True), "slurm": (True, True, True), "docker": (False, False, False),
                     "skypilot": (False, False, False), "dgxcloud": (False, False, False),
                     "lepton": (False, False, False)}


def test_loading_the_backends_imports_no_heavy_package() -> None:
    code = ("import sys\nfrom nemo_runspec.env import registry\n"
            "for n in registry.builtin_names(): registry.backend_class(n)\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('nemo_run', 'ray', 'torch', 'sky', 'leptonai', 'docker', 'wandb', 'omegaconf'))\n"
            "print(heavy)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.strip() == "[]"
