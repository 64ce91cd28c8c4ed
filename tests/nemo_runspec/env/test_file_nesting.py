"""An env.toml nested deeper than Python's recursion allows is a one-line error naming
the file and line, for arrays and inline tables alike, not a RecursionError."""

from __future__ import annotations

import pytest

from nemo_runspec.env.file import load_env_file
from nemo_runspec.errors import EnvFileError


@pytest.mark.parametrize(("opener", "closer"), [("[", "]"), ("{a = ", "}")])
def test_deep_nesting_is_a_one_line_error(tmp_path, opener, closer):
    path = tmp_path / "env.toml"
    path.write_text('[p]\nexecutor = "local"\n\nx = ' + opener * 5000 + "1" + closer * 5000 + "\n")
    with pytest.raises(EnvFileError) as err:
        load_env_file(path)
    assert str(err.value).startswith(f"{path}:4: invalid TOML: values nested too deeply")
    assert "\n" not in str(err.value)


def test_a_few_levels_still_load(tmp_path):
    path = tmp_path / "env.toml"
    path.write_text('[p]\nexecutor = "local"\nx = [[[1]]]\n')
    assert load_env_file(path) is not None


def test_profile_get_gives_the_documented_defaults(tmp_path):
    """docs/env-toml.md's defaults are what ``EnvProfile.get`` (and ``[]``) return for unset keys,
    and the values the executor and the SSH tunnel use."""
    from nemo_runspec.env import load_env_profile
    from nemo_runspec.execution.executor import DEFAULT_JOB_NAME_PREFIX, DEFAULT_TIME

    path = tmp_path / "env.toml"
    path.write_text('[p]\nexecutor = "slurm"\naccount = "a"\npartition = "b"\n')
    prof = load_env_profile("p", path)
    assert (prof.get("time"), prof["time"]) == (DEFAULT_TIME, DEFAULT_TIME) == ("04:00:00", "04:00:00")
    assert prof.get("port") == 22 and prof.get("job_name_prefix") == DEFAULT_JOB_NAME_PREFIX
    assert prof.get("retries") == 0 and prof.get("detach") is False and prof.get("dry_run") is False
    assert "time" not in prof  # a default is not a value the file set


