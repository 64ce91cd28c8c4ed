"""executor = "dgxcloud": a job with secrets is shown with what submission refuses (its data
mover would copy them into a command line); multi-node torchrun reads the PyTorchJob's
variables; the job dir goes under pvc_nemo_run_dir."""

from __future__ import annotations

import pytest

from nemo_runspec.backends import backend_for
from nemo_runspec.backends.dgxcloud import DgxCloudBackend
from nemo_runspec.errors import ExecutionError


def test_dgxcloud_shows_what_submission_refuses_without_the_secrets(compile_hello) -> None:
    job = compile_hello("dgx")
    backend = backend_for(job)
    assert isinstance(backend, DgxCloudBackend)
    dry = backend.render(job, backend.prepare(job))
    shown = "".join(dry.scripts.values()) + "".join(dry.warnings)
    assert "dgxSECRETvalue0123456789" not in shown and "hf_backendSECRET0123456789abcdef" not in shown
    [warning] = dry.warnings
    assert warning.startswith("warning: submitting this job would stop here: ")
    assert "HF_TOKEN=***REDACTED***" in "".join(dry.scripts.values())


def test_no_secret_is_delivered() -> None:
    assert DgxCloudBackend.deliverable_secrets({}, {}) == {}
    with pytest.raises(ExecutionError, match="would copy them into a workload's command line") as err:
        DgxCloudBackend.deliverable_secrets({"HF_TOKEN": "x"}, {})
    assert err.value.key == "env_vars"


def test_the_job_dir_goes_under_the_pvc_run_dir_and_torchrun_meets_at_master_addr() -> None:
    from types import SimpleNamespace

    executor = SimpleNamespace(pvc_nemo_run_dir="/ws/nemo-run")
    DgxCloudBackend.place_job_dir(executor, "experiments/x/x_1/x")
    assert executor.pvc_job_dir == "/ws/nemo-run/experiments/x/x_1/x"
    assert DgxCloudBackend.rendezvous == ("$MASTER_ADDR", "$RANK")
