"""Collecting a job's series (report/collect.py): a resumed run's lines and a NaN loss."""

from __future__ import annotations

from nemo_runspec.report.logparse import LineParser, parse_lines


def test_resumed_line_and_nan_loss():
    facts = parse_lines(["[rl-smoke] resumed from /c/step_00000012.pt at step 12",
                         "[rl-smoke] step 15/20 | loss nan | lr 1.00e-03 | 10 tok/s"])
    assert [(e.kind, e.step, e.label) for e in facts.events] == [("resumed", 12, "/c/step_00000012.pt")]
    parser = LineParser()
    parser.feed("[rl-smoke] step 15/20 | loss nan | lr 1.00e-03 | 10 tok/s")
    from nemo_runspec.report.collect import _series

    series = _series(parser.finish(), "", "logs")
    assert [s.metric for s in series if s.steps] == ["train/lr", "train/tokens_per_sec"]  # nan is not drawn
