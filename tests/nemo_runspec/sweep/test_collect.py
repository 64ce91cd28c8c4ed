"""Taking a command's last step while a sweep compiles a point (sweep/collect.py, through
job/last_step.py)."""

from __future__ import annotations

import threading

from nemo_runspec.job.last_step import take
from nemo_runspec.sweep.collect import Taken, collecting


def test_outside_a_sweep_nothing_is_taken():
    assert take("local", job="j") is False


def test_inside_a_sweep_each_step_is_recorded_in_order_and_the_block_ends_it():
    with collecting() as c:
        assert take("dry-run", job="a") is True
        assert take("slurm", job="b", prepared="p") is True
    assert c.taken == [Taken("dry-run", "a"), Taken("slurm", "b", "p")]
    assert take("local", job="c") is False


def test_collectors_nest_and_other_threads_are_not_collected():
    seen = []
    with collecting() as outer:
        with collecting() as inner:
            take("local", job=1)
            t = threading.Thread(target=lambda: seen.append(take("local", job=2)))
            t.start()
            t.join()
        take("other", job=3)
    assert [x.job for x in inner.taken] == [1] and [x.job for x in outer.taken] == [3]
    assert seen == [False]
