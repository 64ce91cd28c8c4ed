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
    for flag in ("chains", "waits_for_jobs", "sweeps", "composes", "runs_here", "bare_metal"):
        assert isinstance(getattr(cls, flag), bool), flag
    assert isinstance(cls.shares_filesystem({}), bool)
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
    facts = {n: tuple(getattr(registry.backend_class(n), f) for f in ("composes", "runs_here", "bare_metal"))
             for n in registry.builtin_names()}
    assert facts == {"local": (True, True, False), "slurm": (True, False, True), "docker": (False, False, False),
                     "skypilot": (False, False, False), "dgxcloud": (False, False, False),
                     "lepton": (False, False, False)}


@pytest.mark.parametrize(("values", "shared"), [
    ({"executor": "local"}, True), ({"executor": "docker"}, True), ({"executor": "slurm"}, True),
    ({"executor": "slurm", "tunnel": "local"}, True), ({"executor": "slurm", "tunnel": "ssh"}, False),
    ({"executor": "skypilot"}, False), ({"executor": "dgxcloud"}, False), ({"executor": "lepton"}, False),
])
def test_which_jobs_see_this_machines_filesystem(values: dict[str, str], shared: bool) -> None:
    assert registry.backend_class(values["executor"]).shares_filesystem(values) is shared


def test_create_executor_builds_the_local_and_slurm_executors_their_backends_declare() -> None:
    from nemo_runspec.execution.executor import LOCAL_EXECUTOR, SLURM_EXECUTOR

    assert registry.backend_class("local").nemo_run_executor == LOCAL_EXECUTOR
    assert registry.backend_class("slurm").nemo_run_executor == SLURM_EXECUTOR


def test_loading_the_backends_imports_no_heavy_package() -> None:
    code = ("import sys\nfrom nemo_runspec.env import registry\n"
            "for n in registry.builtin_names(): registry.declared(n)\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('nemo_run', 'ray', 'torch', 'sky', 'leptonai', 'docker', 'wandb', 'omegaconf', 'pydantic'))\n"
            "print(heavy)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.strip() == "[]"
