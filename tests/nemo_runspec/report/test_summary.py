"""The lines ``nemotron report`` prints (report/summary.py): one per job, stage or point,
the best point marked, the outcome under its job."""

from __future__ import annotations

from nemo_runspec.report.model import (
    EVAL_LOSS,
    JOB,
    SWEEP,
    TOKENS_PER_SEC,
    TRAIN_LOSS,
    Attempt,
    Identity,
    JobReport,
    Member,
    Report,
    Series,
)
from nemo_runspec.report.summary import job_line, summary_lines


def _job(**kw):
    series = []
    for metric, value in ((TRAIN_LOSS, 6.4373), (EVAL_LOSS, 6.91), (TOKENS_PER_SEC, 2510.4)):
        s = Series(metric=metric, attempt=0)
        s.add(40, value)
        series.append(s)
    return JobReport(id="7", state="COMPLETED", exit_code=0, started=0.0, ended=60.0, series=series,
                     attempts=[Attempt(0, kind="preempted", requeued=True), Attempt(1, kind="completed")],
                     identity=Identity(recipe="nano3/pretrain"), **kw)


def test_a_job_line_has_state_attempts_step_loss_throughput_and_time():
    assert job_line(_job()) == ("COMPLETED (exit 0), 2 attempts (preempted), step 40, loss 6.4373 (eval 6.9100), "
                                "2,510 tok/s, 1m00s")


def test_a_bare_job_line_is_its_state():
    assert job_line(JobReport(id="1", state="PENDING")) == "PENDING"
    assert job_line(JobReport(id="1", state="RUNNING", attempts=[Attempt(0)], profiles=["a.nsys-rep"])) == (
        "RUNNING, 1 attempt, 1 nsys report(s)")


def test_a_job_report_is_one_line_and_its_outcome():
    report = Report(kind=JOB, id="7", title="t", generated=0.0, members=[Member("job", job=_job(outcome="done"))])
    assert summary_lines(report) == [f"job 7 (nano3/pretrain): {job_line(_job())}", "  done"]


def test_a_sweep_names_each_points_overrides_and_marks_the_best():
    report = Report(kind=SWEEP, id="s", title="t", generated=0.0, best=1, members=[
        Member("point 0", job=_job(), overrides={"lr": "1e-3"}),
        Member("point 1", job=_job(), overrides={"lr": "1e-4"}),
        Member("point 2", skipped="")])
    lines = summary_lines(report)
    assert lines[0].startswith("point 0 [lr=1e-3]: job 7 (nano3/pretrain): COMPLETED") and "best" not in lines[0]
    assert lines[1].endswith("  <- best")
    assert lines[2] == "point 2: skipped (no job)"
