"""A run here (no profile) ends as a job on Slurm does (docs/execution.md, "How a job ends"):
after the job's own output, the CLI says the job's outcome line first, then its state and
exit code, then the job dir. Real `nemotron` processes, real recipes and scripts."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from tests.nemotron_cli import NEMOTRON

BOOM = '''# /// script
# [tool.runspec]
# schema = "1"
# name = "user/boom"
# [tool.runspec.run]
# launch = "direct"
# ///
"""A user's training script that fails in its own code."""
print("step 1 of my training", flush=True)
rows = {"lr": 0.1}
print(rows["learning_rate"])
'''
FINE = BOOM.replace('rows = {"lr": 0.1}\nprint(rows["learning_rate"])', 'print("accuracy 0.93", flush=True)')


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp / "home"), NEMOTRON_ARTIFACTS_ROOT=str(tmp / "reg"), COLUMNS="200",
               TERM="dumb")
    return env


def _run(tmp: Path, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), *argv], cwd=tmp, env=_env(tmp), capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _ending(stderr: str) -> list[str]:
    """The last three lines on stderr: the outcome, the state line, the job dir."""
    return stderr.rstrip("\n").splitlines()[-3:]


def _job_dir(stderr: str) -> Path:
    return Path(re.search(r"^job dir: (\S+)$", stderr, re.M).group(1))


def test_a_users_exception_is_the_last_word_of_a_local_run(tmp_path):
    (tmp_path / "boom.py").write_text(BOOM)
    proc = _run(tmp_path, "run", str(tmp_path / "boom.py"))
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("step 1 of my training\n")  # the job's output, as it printed it
    job_dir = _job_dir(proc.stderr)
    assert _ending(proc.stderr) == [
        "KeyError: 'learning_rate'",
        f"job {job_dir.name}: FAILED (exit code 1); the job wrote no outcome line: the line above is the last "
        "error in its log",
        f"  job dir: {job_dir}"]


INTERLEAVED = BOOM.replace('rows = {"lr": 0.1}\nprint(rows["learning_rate"])', """import sys, time
sys.stderr.write("Traceback (most recent call last):\\n  File \\"train.py\\", line 9, in <module>\\n")
sys.stderr.flush()
time.sleep(0.5)
print("step 2 of my training", flush=True)  # read between the traceback's lines
time.sleep(0.5)
sys.stderr.write("KeyError: 'learning_rate'\\n")
sys.exit(1)""")


def test_a_line_of_stdout_read_inside_a_traceback_does_not_hide_the_exception(tmp_path):
    """Two pipes, two readers: a line the job printed on stdout can be read between the
    lines of its traceback on stderr (seen under load in CI). The exception is still the
    summary's first line."""
    (tmp_path / "boom.py").write_text(INTERLEAVED)
    proc = _run(tmp_path, "run", str(tmp_path / "boom.py"))
    assert proc.returncode == 1, proc.stderr
    assert "step 2 of my training" in proc.stdout
    assert _ending(proc.stderr)[0] == "KeyError: 'learning_rate'"

def test_a_users_script_that_succeeds_is_summed_up_by_its_last_line(tmp_path):
    (tmp_path / "fine.py").write_text(FINE)
    proc = _run(tmp_path, "run", str(tmp_path / "fine.py"))
    assert proc.returncode == 0, proc.stderr
    job_dir = _job_dir(proc.stderr)
    assert _ending(proc.stderr) == [
        "accuracy 0.93",
        f"job {job_dir.name}: COMPLETED (exit code 0); the job wrote no outcome line: the line above is the last "
        "line in its log",
        f"  job dir: {job_dir}"]


def test_a_failure_in_our_code_under_torchrun_ends_with_our_error_not_torchruns_report(tmp_path):
    """Two local processes under torchrun: each rank writes its error and outcome line, then
    torchrun prints its ChildFailedError report; the CLI's last lines are ours again."""
    assert _run(tmp_path, "nano3", "data", "prep", "pretrain", "-c", "tiny").returncode == 0
    proc = _run(tmp_path, "nano3", "pretrain", "-c", "tiny", "run.env.local_nproc=2", "+fallback.device=cuda")
    assert proc.returncode != 0, proc.stderr
    said = "error: fallback.device is cuda but no GPU is visible"
    assert said in proc.stderr and "ChildFailedError" in proc.stderr  # torchrun's report is in the output
    job_dir = _job_dir(proc.stderr)
    message, state, where = _ending(proc.stderr)
    assert message == said
    assert re.fullmatch(rf"job {job_dir.name}: FAILED \(exit code 1; rank \d exited 2\)", state), state
    assert where == f"  job dir: {job_dir}"


def test_a_successful_data_prep_ends_with_its_summary_line(tmp_path):
    proc = _run(tmp_path, "nano3", "data", "prep", "pretrain", "-c", "tiny")
    assert proc.returncode == 0, proc.stderr
    [line] = [ln for ln in proc.stdout.splitlines() if ln.startswith("nemotron-outcome: ")]
    outcome = json.loads(line.partition("nemotron-outcome: ")[2])
    job_dir = _job_dir(proc.stderr)
    assert _ending(proc.stderr) == [outcome["message"], f"job {job_dir.name}: COMPLETED (exit code 0)",
                                    f"  job dir: {job_dir}"]
