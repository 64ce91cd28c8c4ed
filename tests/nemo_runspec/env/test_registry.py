"""The registry: the built-in names, in the order messages list them, found without reading
any distribution's entry points; an unknown name is one line. (Plug-ins through a real entry
point: tests/nemo_runspec/backends/test_base_plugin_entry_point.py.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from nemo_runspec.env import registry
from nemo_runspec.errors import ConfigError


def test_the_builtin_names_in_message_order() -> None:
    assert registry.builtin_names() == ("local", "slurm", "docker", "skypilot", "dgxcloud", "lepton")
    assert registry.DEFAULT_EXECUTOR in registry.builtin_names()


def test_each_builtin_is_the_class_of_its_name_and_declares_its_keys() -> None:
    from nemo_runspec.env.keys import ProfileKeys

    for name in registry.builtin_names():
        cls = registry.backend_class(name)
        assert cls.name == name
        assert isinstance(registry.declared(name), ProfileKeys) and registry.declared(name) is cls.profile
    assert [n for n in registry.builtin_names() if registry.declared(n).lenient] == ["local", "slurm"]


def test_env_validation_reads_its_executor_names_here() -> None:
    from typing import get_args

    from nemo_runspec.env.executor_keys import ExecutorName
    from nemo_runspec.env.model import EnvProfileModel

    assert get_args(ExecutorName) == registry.builtin_names()
    assert EnvProfileModel(executor="lepton").executor == "lepton"


def test_a_builtin_name_never_reads_entry_points() -> None:
    code = ("import sys\nfrom nemo_runspec.env import registry\n"
            "for n in registry.builtin_names(): registry.backend_class(n); registry.is_backend(n)\n"
            "print(registry._plugins.cache_info().misses, 'importlib.metadata' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.split() == ["0", "False"]


def test_an_unknown_name_is_one_line() -> None:
    assert not registry.is_backend("no-such-backend")
    with pytest.raises(ConfigError) as err:
        registry.backend_class("no-such-backend")
    assert err.value.problem == "no backend is registered for executor = 'no-such-backend'"
    assert err.value.hint.startswith("one of local, slurm, docker, skypilot, dgxcloud, lepton, or install")
