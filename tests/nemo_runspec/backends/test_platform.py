"""docker, skypilot, dgxcloud, lepton: prepared by execution.backend_job (offline); the dry
run is the executor's fields and the job script, secrets redacted, and what submission
would refuse as a warning."""

from __future__ import annotations

from nemo_runspec.backends import backend_for
from nemo_runspec.backends.platform import DgxCloudBackend, DockerBackend


def test_docker_shows_the_fields_and_the_job_script(compile_hello) -> None:
    job = compile_hello("dk")
    backend = backend_for(job)
    assert isinstance(backend, DockerBackend)
    dry = backend.render(job, backend.prepare(job))
    titles = list(dry.scripts)
    assert titles[0].startswith("nemo-run DockerExecutor") and "ipc_mode: host" in dry.scripts[titles[0]]
    assert "/nemo_run/nemotron-job.sh" in titles and dry.warnings == ()


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
