"""The files of a job dir a report reads (report/jobfiles.py): one POSIX sh script prints them
in sections (here, or over SSH through the same script) and the sections are read back; run
here on real job dirs."""

from __future__ import annotations

from nemo_runspec.report.jobfiles import TAIL_LINES, read_here, read_with
from nemo_runspec.slurm.client import run_here


def _job_dir(root):
    (root / "resilience").mkdir(parents=True)
    (root / "job.yaml").write_text("run:\n  profile: dgx\n")
    (root / "resilience" / "attempts.jsonl").write_text('{"attempt": 0}\n')
    log = ["noise line"] * 3 + ["step 1/10 | loss 2.5", "eval loss 2.9 at step 1"] + [f"l{i}" for i in range(60)]
    (root / "log-t_7_0.out").write_text("\n".join(log) + "\n")
    (root / "prof.nsys-rep").write_text("")
    return root


def test_the_sections_come_back_whole_filtered_tailed_and_listed(tmp_path):
    root = _job_dir(tmp_path / "job dir with space")
    files = read_here(str(root))
    assert not files.missing and files.root == str(root)
    assert files.whole["job.yaml"].startswith("run:\n  profile: dgx")
    assert files.whole["resilience/attempts.jsonl"].strip() == '{"attempt": 0}'
    assert files.lines["log-t_7_0.out"] == ["step 1/10 | loss 2.5", "eval loss 2.9 at step 1"]
    assert files.tails["log-t_7_0.out"] == [f"l{i}" for i in range(60 - TAIL_LINES, 60)]
    assert files.listed == ["prof.nsys-rep"]


def test_the_same_script_through_a_runner_reads_the_same(tmp_path):
    root = _job_dir(tmp_path / "j")
    assert read_with(run_here, str(root)) == read_here(str(root))


def test_a_missing_job_dir_is_said_not_raised(tmp_path):
    files = read_here(str(tmp_path / "gone"))
    assert files.missing and files.whole == {} and files.lines == {}
