"""Submitting a sweep (sweep/submit.py): more points than the cluster's MaxArraySize is one line before anything is submitted."""

from __future__ import annotations

import pytest

from nemo_runspec.errors import ConfigError
from nemo_runspec.sweep.submit import check_array_size
from tests.nemo_runspec.sweep.test_array import _array


def test_more_points_than_max_array_size_is_one_line(sandbox, monkeypatch):
    job, plan = _array("torchrun", "dev")
    monkeypatch.setenv("FAKE_MAX_ARRAY", "2")  # the cluster's scontrol says MaxArraySize = 2
    with pytest.raises(ConfigError) as err:
        check_array_size([job], offline=False)
    assert "3 points, more than one Slurm array takes (the cluster's MaxArraySize is 2" in str(err.value)
    check_array_size([job], offline=True)  # offline (a dry run) the cluster is not asked
    job.values = {**job.values, "max_array_size": 3}
    check_array_size([job], offline=True)  # the profile's key, 3: indices 0..2 fit
    job.values = {**job.values, "max_array_size": 2}
    with pytest.raises(ConfigError, match="the profile's max_array_size is 2"):
        check_array_size([job], offline=True)
