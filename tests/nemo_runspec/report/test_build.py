"""Building a report (report/build.py) from job dirs on this machine: a Slurm job's dir read
alone, a sweep of several jobs with its varying overrides and best point, and no reference
as one usage line. (Reports by Slurm id and pipe id: nemotron/cli/commands/test_report.py.)"""

from __future__ import annotations

import pytest

from nemo_runspec.errors import CLIUsageError
from nemo_runspec.report.build import build_report, sweep_report
from nemo_runspec.report.model import EVAL_LOSS, JOB, SWEEP, TRAIN_LOSS, JobReport, Series


def _slurm_job_dir(root, job_id, loss, lr):
    root.mkdir(parents=True)
    (root / "job.yaml").write_text(
        f"run:\n  cli: {{argv: [nano3, pretrain], config: tiny, overrides: [train.lr={lr}, seed=1]}}\n"
        "  recipe: {name: nano3/pretrain}\n")
    (root / f"log-pretrain_{job_id}_0.out").write_text(
        "".join(f"[pretrain] step {s}/10 | loss {loss + 10 - s:.4f} | lr 1e-3 | 100 tok/s\n" for s in (1, 5, 10)))
    return root


def test_a_slurm_job_dir_alone_is_a_job_report_saying_what_it_lacks(tmp_path):
    root = _slurm_job_dir(tmp_path / "jobs" / "pretrain-1", "4242", 2.0, "1e-4")
    report = build_report([str(root)])
    assert (report.kind, report.id) == (JOB, "4242")
    job = report.members[0].job
    assert job.where == "slurm" and job.final(TRAIN_LOSS) == 2.0 and job.last_step == 10
    assert report.title == "nano3/pretrain job 4242"
    assert any("read from the job dir alone" in n for n in job.notes)


def test_several_job_dirs_are_a_sweep_with_the_best_point(tmp_path):
    a = _slurm_job_dir(tmp_path / "a", "1", 3.0, "1e-3")
    b = _slurm_job_dir(tmp_path / "b", "2", 2.0, "1e-4")
    report = build_report([str(a), "", str(b)])
    assert report.kind == SWEEP and report.best == 1 and report.best_metric == TRAIN_LOSS
    assert [m.overrides for m in report.members] == [{"train.lr": "1e-3"}, {"train.lr": "1e-4"}]  # seed is the same


def test_the_best_point_is_by_eval_loss_when_every_point_has_one():
    def job(train, ev):
        j = JobReport(id="x")
        for metric, value in ((TRAIN_LOSS, train), (EVAL_LOSS, ev)):
            if value is not None:
                s = Series(metric=metric, attempt=0)
                s.add(1, value)
                j.series.append(s)
        return j

    assert sweep_report("t", [job(1.0, 3.0), job(2.0, 2.5)], [{}, {}]).best == 1
    partial = sweep_report("t", [job(1.0, 3.0), job(2.0, None)], [{}, {}])
    assert (partial.best, partial.best_metric) == (0, TRAIN_LOSS)


def test_nothing_to_report_on_is_a_usage_error():
    with pytest.raises(CLIUsageError) as e:
        build_report(["  "])
    assert "nothing to report on" in str(e.value)
