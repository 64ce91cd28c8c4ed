"""executor = "lepton": mounts are tables, secrets come from the secret store that
secret_vars names, the job dir goes under nemo_run_dir."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from nemo_runspec.backends.lepton import LeptonBackend
from nemo_runspec.errors import ExecutionError


def test_secrets_come_from_the_secret_store() -> None:
    assert LeptonBackend.deliverable_secrets({"HF_TOKEN": "x"}, {"secret_vars": {"HF_TOKEN": "hf"}}) == {}
    with pytest.raises(ExecutionError, match="secret store") as err:
        LeptonBackend.deliverable_secrets({"HF_TOKEN": "x", "A_KEY": "y"}, {"secret_vars": {"HF_TOKEN": "hf"}})
    assert err.value.key == "secret_vars" and "A_KEY = " in (err.value.hint or "")


def test_fields_pass_the_mount_tables_on() -> None:
    mount = {"path": "/s", "mount_path": "/s", "from": "node-nfs:x"}
    fields = LeptonBackend.executor_fields({"mounts": [mount], "node_group": "ng"}, nodes=2, gpus=8, nproc=8,
                                           image="img:1")
    assert fields == {"container_image": "img:1", "nodes": 2, "gpus_per_node": 8, "nprocs_per_node": 8,
                      "mounts": [mount], "node_group": "ng"}
    assert LeptonBackend.profile.mount_tables


def test_the_job_dir_goes_under_nemo_run_dir() -> None:
    executor = SimpleNamespace(nemo_run_dir="/shared/nr")
    LeptonBackend.place_job_dir(executor, "experiments/x/x_1/x")
    assert executor.lepton_job_dir == "/shared/nr/experiments/x/x_1/x"
