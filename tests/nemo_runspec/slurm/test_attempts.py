"""Attempt records of a resilient job (slurm/attempts.py) read back as a brief and as lines."""

from __future__ import annotations

import json

from nemo_runspec.slurm import attempts as sa


def test_attempt_records_read_back_brief_and_lines():
    text = "\n".join(json.dumps(r) for r in [
        {"event": "start", "attempt": 0, "nodes": "n1", "exclude": ""},
        {"event": "end", "attempt": 0, "kind": "stall", "reason": "rank 1 on n1 stalled", "node": "n1",
         "requeue": True},
        {"event": "start", "attempt": 1, "nodes": "n2", "exclude": "n1"},
    ]) + "\n{broken"
    got = sa.parse(text)
    assert [(a.number, a.kind, a.node) for a in got] == [(0, "stall", "n1"), (1, "", "")]
    assert sa.brief(got) == "2: stall n1"
    assert sa.lines(got) == ["attempt 0 on n1: rank 1 on n1 stalled -> requeued",
                             "attempt 1 on n2, excluding n1: running (or ended without a record)"]
    assert sa.brief([]) == "-"
