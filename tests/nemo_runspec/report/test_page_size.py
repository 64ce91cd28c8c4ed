"""A 30,000-step job in 3 attempts makes a page under 2 MB (bench/bench_report.py times it in
the browser); its curves are thinned out, the JSON keeps every point."""

from __future__ import annotations

import json
import math
import random

from nemo_runspec.report.model import (
    EVAL_LOSS,
    JOB,
    TOKENS_PER_SEC,
    TRAIN_LOSS,
    Attempt,
    Event,
    JobReport,
    Member,
    Report,
    Series,
)
from nemo_runspec.report.page import render_html


def _long_job() -> JobReport:
    rng = random.Random(1)
    job = JobReport(id="4242", name="nano3-pretrain", state="COMPLETED", exit_code=0, started=1e9, ended=1e9 + 3e4)
    bounds = [(0, 9_800, "preempted"), (9_000, 20_100, "timelimit"), (20_000, 30_000, "completed")]
    t = 1e9
    for number, (first, last, kind) in enumerate(bounds):
        job.attempts.append(Attempt(number, start=t, end=t + 9_000, kind=kind, requeued=kind != "completed",
                                    step=last if kind != "completed" else None))
        loss, tps, ev = (Series(m, number) for m in (TRAIN_LOSS, TOKENS_PER_SEC, EVAL_LOSS))
        for step in range(first + 1, last + 1):
            t += 0.9
            loss.add(step, 2 + 8 * math.exp(-step / 4000) + 0.05 * rng.gauss(0, 1), t)
            if step % 10 == 0:
                tps.add(step, 5e5 + 3e4 * rng.random(), t)
            if step % 500 == 0:
                ev.add(step, 2.1 + 8 * math.exp(-step / 4000), t)
            if step % 1000 == 0:
                job.events.append(Event("checkpoint", t, number, step, f"/ckpt/step_{step:08d}.pt"))
        job.series += [loss, tps, ev]
    return job


def test_thirty_thousand_steps_in_three_attempts_stay_under_two_megabytes():
    report = Report(JOB, "4242", "nano3/pretrain job 4242", 1e9 + 3e4, [Member("4242", _long_job())])
    html = render_html(report)
    assert len(html.encode()) < 2_000_000, len(html.encode())
    assert html.count("series/0/train/loss/") == 3 and "requeues/0" in html
    data = report.to_json()
    steps = sum(len(s["steps"]) for s in data["members"][0]["job"]["series"] if s["metric"] == TRAIN_LOSS)
    assert steps == 9_800 + 11_100 + 10_000  # --format json: every point
    json.dumps(data)  # and it is JSON
