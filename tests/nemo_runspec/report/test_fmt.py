"""How a report writes times, durations and numbers (report/fmt.py)."""

from __future__ import annotations

import time

from nemo_runspec.report.fmt import number, span, when


def test_when_is_local_time_or_a_dash():
    t = time.mktime((2025, 6, 1, 10, 0, 0, 0, 0, -1))
    assert when(t) == "2025-06-01 10:00:00"
    assert when(None) == "-"


def test_span_drops_empty_leading_units():
    assert span(3723) == "1h02m03s"
    assert span(245) == "4m05s"
    assert span(6) == "6s"
    assert span(5.6) == "6s"
    assert span(3600) == "1h00m00s"
    assert span(None) == "-"


def test_number_has_digits_and_thousands_separators():
    assert number(6.43731) == "6.4373"
    assert number(2510, 0) == "2,510"
    assert number(None) == "-"
