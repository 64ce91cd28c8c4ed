"""Packaging progress (packaging/progress.py): plain output is one start line and a summary; fast packaging reports nothing."""

from __future__ import annotations

import io

from nemo_runspec.packaging.progress import ProgressEvent, console_progress


def test_plain_progress_prints_one_start_line_and_a_summary():
    stream = io.StringIO()
    report = console_progress(stream)
    for i in range(5):
        report(ProgressEvent("packaging code", i, 10, i * 1_000_000, None, 0.5 + i / 10))
    report(ProgressEvent("packaging code", 10, 10, 12_500_000, None, 1.23, done=True))
    lines = stream.getvalue().splitlines()
    assert lines == ["packaging code ...", "packaging code: 10/10 files, 12.5 MB (1.2 s)"]


def test_fast_packaging_reports_nothing(tmp_path):
    from nemo_runspec.packaging.pattern import package_pattern

    (tmp_path / "a.txt").write_text("a")
    events = []
    package_pattern("*.txt", tmp_path, tmp_path / "out" / "x.tar.gz", use_cache=False, progress=events.append)
    assert events == []
