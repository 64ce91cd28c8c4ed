"""The report's records (report/model.py): series that drop what cannot be drawn, a job's final
values across attempts, its wall time, the sweep's ranking metric and the JSON layout."""

from __future__ import annotations

import math

from nemo_runspec.report.model import (
    EVAL_LOSS,
    FORMAT,
    TOKENS_PER_SEC,
    TRAIN_LOSS,
    Event,
    JobReport,
    Member,
    Report,
    Series,
    final_loss,
    tokens_per_sec,
)


def _series(metric, attempt, points):
    s = Series(metric=metric, attempt=attempt)
    for step, value in points:
        s.add(step, value)
    return s


def test_a_series_keeps_finite_points_only():
    s = _series(TRAIN_LOSS, 0, [(1, 2.0), (2, math.nan), (3, math.inf), (4, 1.5)])
    assert (s.steps, s.values, s.total, s.last) == ([1, 4], [2.0, 1.5], 2, 1.5)
    assert Series(metric=TRAIN_LOSS, attempt=0).last is None


def test_final_is_the_value_at_the_highest_step_of_any_attempt():
    job = JobReport(id="1", series=[_series(TRAIN_LOSS, 1, [(5, 3.0), (10, 2.0)]),
                                    _series(TRAIN_LOSS, 0, [(5, 4.0), (8, 2.5)])])
    assert job.final(TRAIN_LOSS) == 2.0
    assert [s.attempt for s in job.metric(TRAIN_LOSS)] == [0, 1]
    assert job.last_step == 10
    assert job.final(EVAL_LOSS) is None and JobReport(id="2").last_step is None


def test_wall_time_runs_to_the_end_or_the_last_event():
    assert JobReport(id="1").seconds is None
    assert JobReport(id="1", started=100.0, ended=160.0).seconds == 60.0
    running = JobReport(id="1", started=100.0, events=[Event("started", t=100.0), Event("checkpoint", t=130.0),
                                                       Event("checkpoint", step=5)])
    assert running.seconds == 30.0
    assert JobReport(id="1", started=100.0, ended=90.0).seconds == 0.0


def test_a_sweep_ranks_by_eval_loss_else_train_loss():
    both = JobReport(id="1", series=[_series(TRAIN_LOSS, 0, [(1, 2.0)]), _series(EVAL_LOSS, 0, [(1, 3.0)])])
    train = JobReport(id="2", series=[_series(TRAIN_LOSS, 0, [(1, 2.0)])])
    assert final_loss(both) == (EVAL_LOSS, 3.0)
    assert final_loss(train) == (TRAIN_LOSS, 2.0)
    assert final_loss(JobReport(id="3")) is None


def test_throughput_is_the_mean_over_every_window():
    job = JobReport(id="1", series=[_series(TOKENS_PER_SEC, 0, [(1, 100.0), (2, 200.0)]),
                                    _series(TOKENS_PER_SEC, 1, [(3, 600.0)])])
    assert tokens_per_sec(job) == 300.0
    assert tokens_per_sec(JobReport(id="2")) is None


def test_the_json_layout_has_its_format_and_the_members_jobs():
    report = Report(kind="pipe", id="p", title="t", generated=1.0,
                    members=[Member("prep", skipped="output exists"), Member("sft", job=JobReport(id="9"))])
    assert [j.id for j in report.jobs] == ["9"]
    data = report.to_json()
    assert data["format"] == FORMAT and data["members"][1]["job"]["id"] == "9"
    assert data["members"][0]["job"] is None
