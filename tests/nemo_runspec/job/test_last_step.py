"""A command's last step handed to a receiver instead of taken (job/last_step.py); the sweep's
collector on top of it is sweep/test_collect.py."""

from __future__ import annotations

import threading

import pytest

from nemo_runspec.job.last_step import take, taken_by


def test_outside_a_block_the_caller_acts_itself():
    assert take("slurm", job="j", prepared="p") is False


def test_the_receiver_gets_each_step_with_its_parts_until_the_block_ends():
    got = []
    with taken_by(lambda *step: got.append(step)):
        assert take("dry-run", job="a") is True
        assert take("slurm", job="b", prepared="p") is True
    assert got == [("dry-run", "a", None), ("slurm", "b", "p")]
    assert take("local", job="c") is False


def test_the_inner_block_receives_then_the_outer_again_and_other_threads_never():
    outer, inner, elsewhere = [], [], []
    with taken_by(lambda kind, job, prepared: outer.append(job)):
        with taken_by(lambda kind, job, prepared: inner.append(job)):
            take("local", job=1)
            t = threading.Thread(target=lambda: elsewhere.append(take("local", job=2)))
            t.start()
            t.join()
        take("other", job=3)
    assert (outer, inner, elsewhere) == ([3], [1], [False])


def test_a_block_left_by_an_error_takes_nothing_after_it():
    with pytest.raises(RuntimeError), taken_by(lambda *step: None):
        raise RuntimeError("the command failed")
    assert take("local", job="j") is False
