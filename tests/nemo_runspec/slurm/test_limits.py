"""Partition limits (slurm/limits.py): sinfo read, a job its partition can never run refused before submission, nothing checked when sinfo cannot say."""

from __future__ import annotations

import pytest

from nemo_runspec.errors import ConfigError
from nemo_runspec.slurm.limits import check_partition_limits, parse_sinfo, slurm_seconds, slurm_time


def test_parse_sinfo_adds_node_states_and_reads_limits():
    limits = parse_sinfo("p", "2|1-00:00:00|1-4\n3|1-00:00:00|1-4\n")
    assert (limits.nodes, limits.max_time, limits.max_job_nodes) == (5, 86400, 4)
    assert parse_sinfo("p", "2|infinite|1-infinite\n").max_time is None
    assert parse_sinfo("p", "") is None


def fake_sinfo(output: str, rc: int = 0):
    return lambda cmd: (rc, output, "") if cmd.startswith("sinfo -h -p") else (1, "", "unexpected")


@pytest.mark.parametrize(("nodes", "time_limit", "words"), [
    (3, None, "asks for nodes=3 but partition p has 2 node(s)"),
    (2, "2-00:00:00", "asks for time=2-00:00:00 but partition p allows at most 1-00:00:00"),
])
def test_a_job_its_partition_can_never_run_is_refused(nodes, time_limit, words):
    with pytest.raises(ConfigError) as err:
        check_partition_limits(fake_sinfo("2|1-00:00:00|1-infinite\n"), partition="p", nodes=nodes,
                               time_limit=time_limit, source="job demo")
    assert words in str(err.value)


def test_a_per_job_node_maximum_is_named():
    with pytest.raises(ConfigError, match="allows at most 2 node"):
        check_partition_limits(fake_sinfo("8|infinite|1-2\n"), partition="p", nodes=4, time_limit=None)


@pytest.mark.parametrize("run", [fake_sinfo("", rc=1), fake_sinfo("garbage\n"), fake_sinfo("")])
def test_nothing_is_checked_when_sinfo_cannot_say(run):
    check_partition_limits(run, partition="p", nodes=99, time_limit="99-00:00:00")


def test_within_limits_passes():
    check_partition_limits(fake_sinfo("2|1-00:00:00|1-infinite\n"), partition="p", nodes=2, time_limit="23:59:00")
    assert slurm_seconds(slurm_time(86400)) == 86400
