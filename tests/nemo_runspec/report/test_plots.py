"""The page's Bokeh figures (report/plots.py), read back through their named data sources:
curves per attempt, requeue lines, every sweep point overlaid, and the timeline's bars and events."""

from __future__ import annotations

from nemo_runspec.report.model import (
    EVAL_LOSS,
    JOB,
    SWEEP,
    TOKENS_PER_SEC,
    TRAIN_LOSS,
    Attempt,
    Event,
    JobReport,
    Member,
    Report,
    Series,
)
from nemo_runspec.report.plots import job_figures, sweep_figures, timeline_figure


def _s(metric, attempt, points):
    s = Series(metric=metric, attempt=attempt)
    for step, value in points:
        s.add(step, value)
    return s


def _source(fig, name):
    from bokeh.models import ColumnDataSource

    return next(m for m in fig.select({"type": ColumnDataSource}) if m.name == name).data


def _job():
    return JobReport(id="7", name="pretrain", submitted=100.0, started=110.0, ended=200.0,
                     attempts=[Attempt(0, start=110.0, end=150.0, kind="preempted", requeued=True, step=20),
                               Attempt(1, start=160.0, end=200.0, kind="completed")],
                     series=[_s(TRAIN_LOSS, 0, [(10, 3.0), (20, 2.5)]), _s(TRAIN_LOSS, 1, [(30, 2.0)]),
                             _s(EVAL_LOSS, 1, [(30, 2.2)]), _s(TOKENS_PER_SEC, 0, [(10, 100.0)])],
                     events=[Event("checkpoint", t=140.0, attempt=0, step=20), Event("started", t=110.0)])


def test_a_job_has_a_loss_figure_with_its_requeue_and_a_throughput_figure():
    loss, tput = job_figures(0, _job())
    assert _source(loss, f"series/0/{TRAIN_LOSS}/0") == {"step": [10, 20], "value": [3.0, 2.5]}
    assert _source(loss, f"series/0/{EVAL_LOSS}/1")["value"] == [2.2]
    assert _source(loss, "requeues/0") == {"step": [20], "label": ["attempt 0: preempted"]}
    assert _source(tput, f"series/0/{TOKENS_PER_SEC}/0")["value"] == [100.0]
    assert job_figures(0, JobReport(id="8")) == []


def test_a_sweep_overlays_every_point_with_attempts_joined():
    report = Report(kind=SWEEP, id="s", title="t", generated=300.0, best=1,
                    members=[Member("point 0", job=_job()), Member("point 1", job=_job()), Member("point 2")])
    figs = sweep_figures(report)
    assert len(figs) == 3  # train loss, eval loss, throughput
    assert _source(figs[0], f"series/0/{TRAIN_LOSS}/all") == {"step": [10, 20, 30], "value": [3.0, 2.5, 2.0]}


def test_the_timeline_has_a_row_per_attempt_with_queued_time_and_events():
    report = Report(kind=JOB, id="7", title="t", generated=300.0, members=[Member("job", job=_job())])
    fig = timeline_figure(report)
    bars = _source(fig, "timeline/bars")
    assert bars["row"] == ["attempt 0", "attempt 0", "attempt 1"]
    assert bars["kind"] == ["queued", "preempted", "completed"]
    events = _source(fig, "timeline/events")
    assert events["kind"] == ["checkpoint"] and events["label"] == ["checkpoint (step 20)"]
    assert timeline_figure(Report(kind=JOB, id="x", title="t", generated=0.0)) is None
