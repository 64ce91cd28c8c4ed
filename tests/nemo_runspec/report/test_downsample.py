"""Long curves are thinned out for the page without losing a spike."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from nemo_runspec.report.downsample import MAX_POINTS, min_max
from nemo_runspec.report.model import Series


def _series(values: list[float]) -> Series:
    s = Series("train/loss", 0)
    for i, v in enumerate(values):
        s.add(i + 1, v, None)
    return s


def test_short_series_is_kept_whole():
    s = _series([1.0, 2.0, 3.0])
    assert min_max(s) is s


def test_thirty_thousand_steps_keep_the_spike_and_both_ends():
    values = [8.0 * math.exp(-i / 5000) for i in range(30_000)]
    values[17_321] = 50.0  # one loss spike
    values[23_456] = -1.0  # one dip
    shown = min_max(_series(values))
    assert len(shown.steps) <= MAX_POINTS
    assert shown.total == 30_000
    assert shown.steps[0] == 1 and shown.steps[-1] == 30_000
    assert 17_322 in shown.steps and 23_457 in shown.steps
    assert shown.steps == sorted(shown.steps)
    assert max(shown.values) == 50.0 and min(shown.values) == -1.0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=400), st.integers(4, 60))
def test_every_bucket_extreme_survives(values, limit):
    """(small lists and limits: the same rule as MAX_POINTS on 30,000 steps)"""
    shown = min_max(_series(values), limit)
    assert len(shown.steps) <= limit
    assert max(shown.values) == max(values) and min(shown.values) == min(values)
    assert all(values[step - 1] == v for step, v in zip(shown.steps, shown.values, strict=True))
