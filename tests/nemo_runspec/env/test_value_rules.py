"""Rules on profile values beyond their types (env/value_rules.py), each one line at its key."""

from __future__ import annotations

import pytest

from nemo_runspec.env.value_rules import JOB_NAME_PREFIX_MAX, check_values
from nemo_runspec.errors import EnvFileError


def locate(keypath):
    return "env.toml", 10 + len(keypath)


def check(data, complete=True):
    check_values(data, "profile 'p'", locate, complete=complete)


def test_good_values_pass():
    check({"executor": "slurm", "job_name_prefix": "x" * JOB_NAME_PREFIX_MAX, "env_vars": {"A": "b"},
           "job_dir": "/lustre/jobs"})


def test_a_long_job_name_prefix_names_its_length():
    with pytest.raises(EnvFileError) as e:
        check({"job_name_prefix": "x" * (JOB_NAME_PREFIX_MAX + 1)})
    assert str(e.value).startswith(f"env.toml:11: key 'job_name_prefix' in profile 'p': is {JOB_NAME_PREFIX_MAX + 1} "
                                   f"characters long; at most {JOB_NAME_PREFIX_MAX}")
    assert e.value.key == "job_name_prefix"


def test_an_env_value_with_a_dollar_form_outside_the_rule_is_refused_at_its_key():
    with pytest.raises(EnvFileError) as e:
        check({"env_vars": {"OK": "plain", "BAD": "$(whoami)"}})
    assert e.value.key == "env_vars.BAD" and e.value.line == 12


def test_a_slurm_job_dir_the_batch_script_cannot_carry_is_refused_only_when_complete():
    bad = {"executor": "slurm", "job_dir": "/jobs/with\nnewline"}
    with pytest.raises(EnvFileError) as e:
        check(bad)
    assert e.value.key == "job_dir"
    check(bad, complete=False)  # a partial table: the merged profile is checked later
    check({**bad, "tunnel": "ssh", "remote_job_dir": "/r"})  # not the cluster's dir
    check({**bad, "executor": "local"})  # a local run takes any path
