"""executor = "skypilot": its fields, its rule (infra replaces cloud/region/zone), and what it
says when nemo-run's module loads without SkyPilot installed."""

from __future__ import annotations

from types import ModuleType

from nemo_runspec.backends.skypilot import SkypilotBackend
from nemo_runspec.env.executor_keys import executor_problem


def test_fields_carry_gpus_only_when_asked_and_ports_as_a_tuple() -> None:
    fields = SkypilotBackend.executor_fields({"cloud": "kubernetes", "ports": ["8080"], "use_spot": False},
                                             nodes=2, gpus=0, nproc=1, image=None)
    assert fields == {"num_nodes": 2, "torchrun_nproc_per_node": 1, "cloud": "kubernetes", "use_spot": False,
                      "ports": ("8080",)}
    assert SkypilotBackend.executor_fields({}, nodes=1, gpus=4, nproc=4, image="img:1")["gpus_per_node"] == 4


def test_infra_replaces_cloud_region_and_zone() -> None:
    assert executor_problem("skypilot", {"infra": "aws"}) is None
    assert executor_problem("skypilot", {"infra": "aws", "zone": "z"}).startswith("infra = 'aws' replaces cloud")


def test_a_module_without_skypilot_says_what_is_missing() -> None:
    module = ModuleType("nemo_run.core.execution.skypilot")
    assert SkypilotBackend.missing(module) == "SkyPilot"
    module._SKYPILOT_AVAILABLE = True
    assert SkypilotBackend.missing(module) is None
    assert SkypilotBackend.rendezvous[1] == "$SKYPILOT_NODE_RANK"
