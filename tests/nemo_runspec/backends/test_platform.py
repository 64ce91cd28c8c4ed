"""What docker, skypilot, dgxcloud and lepton share (backends/platform.py): prepared by
execution.backend_job (offline), none chains, waits, sweeps or composes, and the helpers that
copy profile values into nemo-run's fields."""

from __future__ import annotations

import pytest

from nemo_runspec.backends.platform import PlatformBackend, plain, set_fields
from nemo_runspec.env import registry

PLATFORMS = ("docker", "skypilot", "dgxcloud", "lepton")


@pytest.mark.parametrize("name", PLATFORMS)
def test_each_platform_is_one_file_declaring_its_own(name: str) -> None:
    cls = registry.backend_class(name)
    assert issubclass(cls, PlatformBackend) and cls.__module__ == f"nemo_runspec.backends.{name}"
    assert not (cls.chains or cls.waits_for_jobs or cls.sweeps or cls.composes or cls.runs_here)
    module, _, attr = cls.nemo_run_executor.partition(":")
    assert module.startswith("nemo_run.core.execution.") and attr.endswith("Executor")
    assert not cls.profile.lenient


def test_set_fields_copies_set_values_as_plain_lists_and_tables() -> None:
    out: dict[str, object] = {}
    set_fields(out, {"a": (1, 2), "b": {"x": 1}, "c": None, "d": False}, ("a", "b", "c", "d", "e"))
    assert out == {"a": [1, 2], "b": {"x": 1}, "d": False}
    assert type(out["a"]) is list and type(out["b"]) is dict


def test_plain_dumps_a_model_by_its_aliases() -> None:
    from nemo_runspec.backends.dgxcloud import pvc_model

    assert plain(pvc_model()(claimName="ws", path="/ws")) == {"claimName": "ws", "path": "/ws",
                                                              "existingPvc": True, "readOnly": False}
    assert plain({"path": "/s"}) == {"path": "/s"}
