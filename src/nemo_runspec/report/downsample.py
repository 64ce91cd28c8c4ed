"""Long curves thinned out for the page, keeping every spike.

A series with more than :data:`MAX_POINTS` points is cut into ``MAX_POINTS // 2``
buckets of consecutive steps; each bucket keeps its lowest and its highest
point, in step order (min/max decimation). A loss spike or a throughput dip
survives whatever the length, and the line drawn through the kept points covers
the same band as the full curve at the page's width (a plot is about 1,000
pixels wide: two points per pixel column). The first and last points are
always kept. ``nemotron report --format json`` gives every point.
"""

from __future__ import annotations

import dataclasses

from nemo_runspec.report.model import Series

#: a series longer than this is thinned out to at most this many points
MAX_POINTS = 2000


def min_max(series: Series, max_points: int = MAX_POINTS) -> Series:
    """``series`` with at most ``max_points`` points (itself when it is short enough);
    ``total`` keeps the original count."""
    n = len(series.steps)
    if n <= max_points:
        return series
    buckets = max(1, (max_points - 2) // 2)
    keep = {0, n - 1}
    inner = n - 2
    for b in range(buckets):
        lo = 1 + b * inner // buckets
        hi = 1 + (b + 1) * inner // buckets
        if lo >= hi:
            continue
        window = range(lo, hi)
        keep.add(min(window, key=series.values.__getitem__))
        keep.add(max(window, key=series.values.__getitem__))
    idx = sorted(keep)
    return dataclasses.replace(
        series, steps=[series.steps[i] for i in idx], values=[series.values[i] for i in idx],
        times=[series.times[i] for i in idx], total=series.total or n)
