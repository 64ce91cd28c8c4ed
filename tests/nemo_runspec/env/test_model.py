"""The typed profile (env/model.py): Slurm time limits read as seconds, and the values a profile
may not hold, each refused by the model with what it must look like (validation adds the file and
line: env/test_validation.py)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from nemo_runspec.env.model import (
    ArtifactsSection,
    EnvProfileModel,
    ResilienceModel,
    WandbSection,
    time_limit_seconds,
)


@pytest.mark.parametrize(("text", "seconds"), [
    ("30", 1800), ("5:30", 330), ("1:02:03", 3723), ("2-0", 172800), ("1-01:30", 91800),
    ("1-00:00:05", 86405), ("1h", None), ("1:60", None), ("1-24", None), ("", None),
])
def test_slurm_time_limits_in_seconds(text, seconds):
    assert time_limit_seconds(text) == seconds


def test_a_good_profile_validates():
    m = EnvProfileModel.model_validate({"executor": "slurm", "account": "a", "time": "1-00:00",
                                        "mounts": ["/lustre:/lustre:ro"], "shm_size": "16g",
                                        "ulimits": ["nofile:65536:65536"], "job_name_prefix": "me-"})
    assert m.time == "1-00:00" and m.mounts == ["/lustre:/lustre:ro"]


@pytest.mark.parametrize(("values", "words"), [
    ({"time": "1h"}, "'1h' is not a Slurm time limit (MM, MM:SS"),
    ({"shm_size": "16 GB"}, "is not a size"),
    ({"ulimits": ["nofile=1"]}, "entry 0 'nofile=1' must look like NAME:SOFT or NAME:SOFT:HARD"),
    ({"mounts": ["/only-one-part"]}, "entry 0 '/only-one-part' must look like src:dst or src:dst:flags"),
    ({"job_name_prefix": ""}, "must not be empty"),
    ({"account": "a b"}, "account"),
    ({"nodes": "2"}, "Input should be a valid integer"),  # strict: no text for a number
    ({"partiton": "p"}, "Extra inputs are not permitted"),
])
def test_values_a_profile_may_not_hold_are_refused(values, words):
    with pytest.raises(ValidationError) as e:
        EnvProfileModel.model_validate({"executor": "slurm", **values})
    assert words in str(e.value)


def test_sections_have_their_defaults_and_bounds():
    assert ResilienceModel().max_restarts == 3 and ResilienceModel().signal_before == 300
    with pytest.raises(ValidationError):
        ResilienceModel(max_restarts=-1)
    assert WandbSection().api_key_env == "WANDB_API_KEY"
    with pytest.raises(ValidationError):
        WandbSection(api_key_env="not a name")
    with pytest.raises(ValidationError):
        ArtifactsSection(backend="s3")
