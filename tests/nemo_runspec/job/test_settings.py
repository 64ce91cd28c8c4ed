"""The job's settings (job/settings.py): the environment a job sees and the resources the profile gives it."""

from __future__ import annotations

from pathlib import Path

import jsonschema  # installed with ray, a core dependency
import pytest
from omegaconf import OmegaConf

from nemo_runspec import parse_text
from nemo_runspec.env import load_env_profile
from nemo_runspec.spec.schema import runspec_json_schema
from tests.nemo_runspec.spec.test_parser import _fresh_cache, err, runspec_block  # noqa: F401 - _fresh_cache: autouse
from tests.nemo_runspec.test_dollar_rule import _profile


def test_the_issue_examples_through_the_job_config(tmp_path: Path, monkeypatch) -> None:
    from nemo_runspec.config import build_job_config
    from nemo_runspec.job.settings import job_env

    monkeypatch.setenv("I30_X", "from-here")
    env = _profile(tmp_path, 'env_vars = { X = "${HOME}/x", Y = "x$$y", Z = "${oc.env:I30_X}" }\n'
                             'startup_commands = ["echo ${HOME}"]\n')
    prof = load_env_profile("c", env)
    cfg = build_job_config(OmegaConf.create({"a": 1}), None, "t/x", tmp_path / "x.py", [], env_profile=prof)
    run_env = job_env(cfg)
    assert run_env["env_vars"] == {"X": "${HOME}/x", "Y": "x$$y", "Z": "from-here"}
    assert run_env["startup_commands"] == ["echo ${HOME}"]
    resolved = OmegaConf.to_container(cfg, resolve=True)  # the job reading its config: no InterpolationKeyError
    assert resolved["run"]["env"]["env_vars"]["X"] == "${HOME}/x"


def test_gpu_word_means_every_gpu_of_the_node_as_the_profile_says(tmp_path):
    """The reference's recipes write resources.gpus_per_node = "gpu": accepted as None
    (the profile's gpus_per_node decides), valid by the JSON schema, refused when a
    Slurm job's profile does not say how many; any other word is still an error."""
    from nemo_runspec.errors import ConfigError
    from nemo_runspec.job.settings import resolve_resources

    text = runspec_block("[tool.runspec.resources]", "nodes = 2", 'gpus_per_node = "gpu"')
    spec = parse_text(text, path=tmp_path / "train.py")
    assert spec.resources.gpus_per_node is None and spec.resources.nodes == 2
    assert resolve_resources({"gpus_per_node": 4}, spec) == (2, 4)
    with pytest.raises(ConfigError, match='gpus_per_node = "gpu"') as exc:
        resolve_resources({}, spec)
    assert "env.toml profile" in str(exc.value.hint)
    validator = jsonschema.Draft202012Validator(runspec_json_schema())
    assert not list(validator.iter_errors({"name": "a/b", "resources": {"gpus_per_node": "gpu"}}))
    assert list(validator.iter_errors({"name": "a/b", "resources": {"gpus_per_node": "gpus"}}))
    bad = runspec_block("[tool.runspec.resources]", 'gpus_per_node = "all"')
    assert "must be an integer" in str(err(bad))
