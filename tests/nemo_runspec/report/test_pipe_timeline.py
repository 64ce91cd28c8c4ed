"""A pipe's timeline: one row per stage, and an arrow for each stage it waits for, read back
from the page in headless Chromium (the e2e pipe test does the same for a real pipe)."""

from __future__ import annotations

from nemo_runspec.report.model import PIPE, Attempt, JobReport, Member, Report
from nemo_runspec.report.page import write_html
from tests.report_browser import render

T0 = 1_750_000_000.0


def _job(job_id: str, *, start: float | None, end: float | None, state: str) -> JobReport:
    job = JobReport(id=job_id, name=f"stage-{job_id}", state=state, submitted=T0, started=start, ended=end)
    if start is not None:
        job.attempts.append(Attempt(0, start=start, end=end, kind=state if end else ""))
    return job


def test_each_dependency_is_an_arrow_from_its_end_to_the_stage_s_start(tmp_path):
    report = Report(PIPE, "nano3-pipe-1", "pipe nano3-pipe-1", T0 + 400, [
        Member("prep", _job("11", start=T0 + 10, end=T0 + 60, state="COMPLETED")),
        Member("pretrain", _job("12", start=T0 + 75, end=T0 + 200, state="COMPLETED"), depends_on=["prep"]),
        Member("convert", None, depends_on=["pretrain"], skipped="its output exists"),
        Member("sft", _job("13", start=None, end=None, state="PENDING"), depends_on=["pretrain", "convert"]),
    ])
    page = write_html(report, tmp_path / "pipe.html")
    shown = render(page, tmp_path / "pipe.png")
    assert shown.requests == [] and shown.errors == []

    bars = shown.sources["timeline/bars"]
    done = {row: (start, end) for row, kind, start, end in
            zip(bars["row"], bars["kind"], bars["start"], bars["end"], strict=True) if kind == "COMPLETED"}
    deps = shown.sources["timeline/deps"]
    # the skipped convert stage has no row: sft's wait for it is in the stage table only
    assert list(zip(deps["from"], deps["to"], strict=True)) == [("prep", "pretrain"), ("pretrain", "sft")]
    assert deps["x0"][0] == done["prep"][1] and deps["x1"][0] == done["pretrain"][0]
    assert deps["x0"][1] == done["pretrain"][1]
    # sft still waits: queued from its submission to the time of the report, where its arrow ends
    waiting = [(start, end) for row, kind, start, end in
               zip(bars["row"], bars["kind"], bars["start"], bars["end"], strict=True) if row == "sft"]
    assert len(waiting) == 1 and bars["kind"][bars["row"].index("sft")] == "queued"
    assert waiting[0][1] - waiting[0][0] == 400_000  # submitted at T0, the report at T0 + 400 s
    assert deps["x1"][1] == waiting[0][1] and deps["x1"][1] - deps["x0"][1] == 200_000
    assert "sft" in shown.text and "pretrain, convert" in shown.text  # "waits for" in the stage table
