"""executor = "docker": its dry run is the executor's fields and the job script; one node only;
its keys are checked as it declares them."""

from __future__ import annotations

import pytest

from nemo_runspec.backends import backend_for
from nemo_runspec.backends.docker import DockerBackend
from nemo_runspec.env.model import EnvProfileModel


def test_docker_shows_the_fields_and_the_job_script(compile_hello) -> None:
    job = compile_hello("dk")
    backend = backend_for(job)
    assert isinstance(backend, DockerBackend)
    dry = backend.render(job, backend.prepare(job))
    titles = list(dry.scripts)
    assert titles[0].startswith("nemo-run DockerExecutor") and "ipc_mode: host" in dry.scripts[titles[0]]
    assert "/nemo_run/nemotron-job.sh" in titles and dry.warnings == ()


def test_one_container_is_one_node() -> None:
    assert DockerBackend.nodes_problem(1) is None
    problem, hint = DockerBackend.nodes_problem(2)
    assert problem == "executor = 'docker' runs one container on this machine; nodes = 2"
    assert hint.startswith("set nodes = 1")


def test_gpus_only_when_asked_and_retries_always() -> None:
    fields = DockerBackend.executor_fields({"mounts": ["/a:/a"], "shm_size": "1g"}, nodes=1, gpus=8, nproc=8,
                                           image="img:1")
    assert fields == {"container_image": "img:1", "ntasks_per_node": 8, "volumes": ["/a:/a"], "shm_size": "1g",
                      "retries": 0}
    assert DockerBackend.executor_fields({"num_gpus": -1}, nodes=1, gpus=0, nproc=1, image=None)["num_gpus"] == -1


@pytest.mark.parametrize(("key", "value", "message"), [
    ("shm_size", "16x", "'16x' is not a size"),
    ("ulimits", ["nofile=1"], "entry 0 'nofile=1' must look like NAME:SOFT or NAME:SOFT:HARD"),
    ("num_gpus", -2, "greater than or equal to -1"),
])
def test_its_keys_are_checked_as_it_declares(key: str, value: object, message: str) -> None:
    from pydantic import ValidationError

    EnvProfileModel.model_validate({"executor": "docker", key: {"shm_size": "16g", "ulimits": ["nofile:1:2"],
                                                                "num_gpus": 1}[key]})
    with pytest.raises(ValidationError, match=message):
        EnvProfileModel.model_validate({"executor": "docker", key: value})
