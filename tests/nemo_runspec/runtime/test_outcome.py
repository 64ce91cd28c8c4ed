"""nemo_runspec.runtime.outcome: the line a job ends its log with, written by Python and by bash, read back."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from nemo_runspec.runtime import outcome as O
from nemo_runspec.templates import template_path


def test_a_line_reads_back_as_it_was_written():
    out = O.Outcome(ok=False, exit_code=2, message='error: a "quoted" path\\x: ü', recipe="nano3/pretrain",
                    figures={"steps": 3, "loss": 1.5}, rank=1, node="n2", attempt=0, time="2025-01-01T00:00:00Z")
    line = out.to_line()
    assert "\n" not in line and line.startswith("nemotron-outcome: {")
    assert O.parse_line(line) == out
    assert json.loads(line[len(O.MARKER):])["v"] == 1


@pytest.mark.parametrize("prefix", ["", "[default0]:", "[default12]:[rank3]:", "0: ", "17: [rank0]:"])
def test_launcher_prefixes_are_accepted(prefix):
    line = prefix + O.Outcome(ok=True, exit_code=0, message="done").to_line()
    assert O.parse_line(line).message == "done"


@pytest.mark.parametrize("line", [
    "+ printf 'nemotron-outcome: {\"v\": 1, \"ok\": true, \"exit_code\": 0, \"message\": \"x\"}\\n'",
    "echo nemotron-outcome: {\"v\": 1, \"ok\": true, \"exit_code\": 0, \"message\": \"x\"}",
    "nemotron-outcome: {not json}",
    "nemotron-outcome: {\"ok\": true}",  # no exit code, no message
    "nemotron-outcome: [1, 2]",
    "[default0]:nemotron-outcome: {\"v\": 1, \"ok\": true, \"exit_code\": 0, \"message\": \"x\"} trailing",
])
def test_what_is_not_an_outcome_line(line):
    assert O.parse_line(line) is None


def _o(ok: bool, attempt: int | None = None, message: str = "") -> O.Outcome:
    return O.Outcome(ok=ok, exit_code=0 if ok else 1, message=message, attempt=attempt)


def test_the_job_outcome_is_the_first_failure_of_its_latest_attempt():
    assert O.pick([]) is None
    assert O.pick([_o(True, message="a"), _o(True, message="b")]).message == "b"
    assert O.pick([_o(True, message="ok"), _o(False, message="rank 1"), _o(False, message="rank 0")]).message == "rank 1"
    # attempt 0 failed and was requeued; attempt 1 succeeded
    assert O.pick([_o(False, 0, "stopped"), _o(True, 1, "final")]).message == "final"
    assert O.pick([_o(True, None, "x"), _o(False, 2, "late")]).message == "late"


def _report(monkeypatch, rank: str | None) -> tuple[O.Report, io.StringIO]:
    for var in ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_RESTART_COUNT"):
        monkeypatch.delenv(var, raising=False)
    if rank is not None:
        monkeypatch.setenv("RANK", rank)
    stream = io.StringIO()
    return O.Report("kit/x", stream=stream), stream


def test_rank_zero_writes_the_success_with_its_figures(monkeypatch):
    report, stream = _report(monkeypatch, "0")
    report.summary("[pretrain] final loss 1.0000", final_loss=1.0, skipped=None)
    assert report.finish(0) == 0
    got = O.parse_line(stream.getvalue().strip())
    assert (got.ok, got.exit_code, got.message, got.figures, got.rank, got.recipe) == \
        (True, 0, "[pretrain] final loss 1.0000", {"final_loss": 1.0}, 0, "kit/x")
    report.finish(0)
    assert len(stream.getvalue().splitlines()) == 1  # once per process


def test_other_ranks_write_only_a_failure_they_can_explain(monkeypatch, capsys):
    report, stream = _report(monkeypatch, "3")
    report.summary("done")
    assert report.finish(0) == 0 and stream.getvalue() == ""
    report, stream = _report(monkeypatch, "3")
    assert report.finish(1) == 1 and stream.getvalue() == ""  # stopped by its launcher: nothing to say
    report, stream = _report(monkeypatch, "3")
    report.error("error: data not found: /x (hint)")
    assert capsys.readouterr().err == "error: data not found: /x (hint)\n"
    report.finish(2)
    got = O.parse_line(stream.getvalue())
    assert (got.ok, got.exit_code, got.message, got.rank) == (False, 2, "error: data not found: /x (hint)", 3)


def test_a_stop_for_a_requeue_is_rank_zeros_summary_with_its_code(monkeypatch):
    report, stream = _report(monkeypatch, None)
    report.summary("[pretrain] stopped after step 7 to be requeued (checkpoint saved)", steps=7)
    monkeypatch.setenv("SLURM_RESTART_COUNT", "2")
    report.finish(75)
    got = O.parse_line(stream.getvalue())
    assert (got.ok, got.exit_code, got.figures, got.attempt, got.rank) == (False, 75, {"steps": 7}, 2, None)
    assert got.message.startswith("[pretrain] stopped after step 7")


_SCRIPT = """
import sys
from nemo_runspec.runtime import outcome

def body(report):
    kind = sys.argv[1]
    if kind == "raise":
        raise ValueError("boom\\nsecond line")
    if kind == "exit":
        raise SystemExit(3)
    if kind == "exit-text":
        sys.exit("fatal: cannot go on")
    print("working")
    return 0

sys.exit(outcome.run("kit/x", body))
"""


@pytest.mark.parametrize(("kind", "code", "message"), [
    ("raise", 1, "ValueError: boom second line"),
    ("exit", 3, "exit code 3"),
    ("exit-text", 1, "fatal: cannot go on"),
    ("ok", 0, "done"),
])
def test_run_ends_every_way_out_with_the_line(kind, code, message):
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, kind], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)})
    assert proc.returncode == code, proc.stderr
    got = O.parse_line(proc.stdout.strip().splitlines()[-1])
    assert got is not None and (got.ok, got.exit_code, got.message) == (code == 0, code, message)
    if kind == "raise":  # printed as Python would, before the line
        assert "Traceback (most recent call last):" in proc.stderr and proc.stderr.rstrip().endswith("second line")


@pytest.mark.parametrize("message", [
    'plain words', 'a "quoted" \\ back\\slash', "tab\there\nnewline", "ünïcode ✓", "$HOME `id` $(id)", "",
])
def test_the_shell_function_writes_what_python_reads(message):
    script = O.shell_function() + '\nemit_outcome false 7 "$MSG" nano3/rl\n'
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin", "MSG": message, "SLURM_RESTART_COUNT": "1",
                               "SLURMD_NODENAME": "n9"})
    assert proc.returncode == 0, proc.stderr
    got = O.parse_line(proc.stdout)
    assert got is not None, proc.stdout
    assert (got.ok, got.exit_code, got.recipe, got.node, got.attempt) == (False, 7, "nano3/rl", "n9", 1)
    assert got.message == " ".join(message.split())
    assert set(json.loads(proc.stdout.partition(": ")[2])) == set(O.Outcome(ok=True, exit_code=0, message="").to_json())


def test_the_ray_template_carries_the_shell_function_verbatim():
    text = template_path("ray_slurm.sub.j2").read_text()
    assert "{% raw %}" + O.shell_function() + "{% endraw %}" in text
