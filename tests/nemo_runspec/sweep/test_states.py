"""The state of each point of a sweep (sweep/states.py): array tasks read from what Slurm
answered (``168_3``, ``168_[4-7]``), a point's newest array or a later local run, cancelled
unstarted tasks, and the last loss a log prints. States are given here as Slurm's answers
(the queries themselves are tested against the cluster in tests/e2e/test_sweeps.py)."""

from __future__ import annotations

from nemo_runspec.slurm.jobs import JobState
from nemo_runspec.sweep.record import ArrayRecord, SweepRecord
from nemo_runspec.sweep.states import (
    CANCELLED_UNSTARTED,
    SEEN,
    completed,
    final_loss,
    states_of,
    tasks_from,
)


def test_array_tasks_are_read_from_single_and_pending_ranges():
    raw = {"168_3": JobState("168_3", state="COMPLETED", source="sacct"),
           "168_[4-5,7%2]": JobState("168_[4-5,7%2]", state="PENDING", source="squeue"),
           "99": JobState("99", state="RUNNING")}
    tasks = tasks_from(raw)
    assert sorted(k for k in tasks if k[1] != SEEN) == [("168", 3), ("168", 4), ("168", 5), ("168", 7)]
    assert tasks[("168", 5)].state == "PENDING" and tasks[("168", 5)].job_id == "168_5"
    assert ("168", SEEN) in tasks and ("99", SEEN) not in tasks


def _rec():
    return SweepRecord(id="s", created="", recipe=None, profile=None, env_file=None,
                       points=[{}, {}, {}, {}],
                       arrays=[ArrayRecord("168", [0, 1, 2], "", "2026-01-01T00:00:00Z"),
                               ArrayRecord("170", [1], "", "2026-01-02T00:00:00Z")],
                       local={"3": {"exit_code": 0, "at": "2026-01-03T00:00:00Z"},
                              "0": {"exit_code": 1, "at": "2025-12-31T00:00:00Z"}})


def test_each_point_takes_its_newest_run():
    known = tasks_from({"168_0": JobState("168_0", state="COMPLETED", source="sacct"),
                        "168_1": JobState("168_1", state="FAILED", source="sacct"),
                        "170_1": JobState("170_1", state="COMPLETED", source="sacct")})
    known[("170", SEEN)] = JobState("170", source="sacct")
    states = states_of([_rec()], known=known)["s"]
    assert states[0].state == "COMPLETED"            # the array ran after the older local failure
    assert states[1].job_id == "170_1"               # the newer array
    assert states[2].state == "CANCELLED" and states[2].note == CANCELLED_UNSTARTED  # sacct knows none
    assert states[3].state == "COMPLETED" and states[3].source == "local"
    assert completed(_rec(), states) == {0, 1, 3}
    assert completed(None) == set()



def test_the_last_loss_a_log_prints():
    assert final_loss("step 1 loss 2.5\nstep 2 loss=2.31\n") == "2.31"
    assert final_loss("iteration 9 | lm loss: 2.3E+00 |") == "2.3E+00"
    assert final_loss("val_loss: -0.5") == "-0.5"
    assert final_loss("no numbers here, lossy") is None
