"""`nemotron report JOB_DIR` of a real tiny local run, opened in headless Chromium.

The run is the nano3 pretrain CPU fallback on the bundled sample data (real data
prep, real training). What the page must plot is read from the run's own
terminal output with this test's own patterns, not from the report code.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.report_browser import chromium, render

NEMOTRON = Path(sys.executable).with_name("nemotron")
STEP = re.compile(r"^\[pretrain\] step (\d+)/\d+ \| loss ([\d.]+) \| lr \S+ \| ([\d,]+) tok/s$", re.M)
EVAL = re.compile(r"^\[pretrain\] eval loss ([\d.]+) at step (\d+)$", re.M)
FINAL_EVAL = re.compile(r"^\[pretrain\] final eval loss ([\d.]+)$", re.M)


def _nemotron(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEMOTRON), *args], env=env, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def local_run(tmp_path_factory) -> tuple[Path, str, dict[str, str]]:
    """A finished local run: its job dir, its stdout and the environment it ran in."""
    chromium()  # skip before spending a training run when there is no browser
    root = tmp_path_factory.mktemp("local-report")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(root / "home"), NEMOTRON_ARTIFACTS_ROOT=str(root / "reg"),
               NEMOTRON_ENV_FILE=str(root / "no-env.toml"), PYTHONUNBUFFERED="1")
    (root / "no-env.toml").write_text("")
    prep = _nemotron(env, "nano3", "data", "prep", "pretrain", "-c", "tiny")
    assert prep.returncode == 0, prep.stderr[-2000:]
    run = _nemotron(env, "nano3", "pretrain", "-c", "tiny", "fallback.max_steps=12", "fallback.log_interval=3",
                    "fallback.eval_interval=6", "fallback.save_interval=6")
    assert run.returncode == 0, run.stderr[-2000:]
    job_dir = Path(re.search(r"^job dir: (\S+)$", run.stderr, re.M).group(1))
    return job_dir, run.stdout, env


def test_report_of_a_local_run_plots_what_the_run_printed(local_run, tmp_path):
    job_dir, stdout, env = local_run
    page = tmp_path / "report.html"
    proc = _nemotron(env, "report", str(job_dir), "-o", str(page))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{page}\n"  # the path alone on stdout; the summary on stderr
    assert "COMPLETED" in proc.stderr and "step 12" in proc.stderr

    shown = render(page, tmp_path / "report.png")
    assert shown.requests == [], "the page must need no network"
    assert shown.errors == []
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    printed = STEP.findall(stdout)
    assert [int(s) for s, _, _ in printed] == [3, 6, 9, 12]
    assert shown.series("series/0/train/loss/0") == {int(s): float(loss) for s, loss, _ in printed}
    assert shown.series("series/0/train/tokens_per_sec/0") == {int(s): float(t.replace(",", ""))
                                                               for s, _, t in printed}
    evals = {int(step): float(loss) for loss, step in EVAL.findall(stdout)}
    evals[12] = float(FINAL_EVAL.search(stdout).group(1))
    assert shown.series("series/0/eval/loss/0") == evals
    assert not any(name.startswith("requeues/") for name in shown.sources)  # one attempt, nothing requeued

    bars = shown.sources["timeline/bars"]
    assert bars["kind"] == ["start-up", "COMPLETED"]
    events = shown.sources["timeline/events"]
    checkpoints = [label for kind, label in zip(events["kind"], events["label"], strict=True) if kind == "checkpoint"]
    assert [re.search(r"step (\d+)", c).group(1) for c in checkpoints] == ["6", "12"]

    assert "nemotron nano3 pretrain -c tiny fallback.max_steps=12" in shown.text
    published = re.search(r"^published (\S+) \(latest\) -> (\S+)", stdout, re.M)
    assert f"{published.group(1)} -> {published.group(2)}" in shown.text
    assert str(job_dir / "progress.jsonl") in shown.text


def test_json_format_gives_the_same_series(local_run, tmp_path):
    job_dir, stdout, env = local_run
    import json

    proc = _nemotron(env, "report", str(job_dir), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    job = data["members"][0]["job"]
    assert data["kind"] == "job" and job["where"] == "local" and job["state"] == "COMPLETED"
    loss = next(s for s in job["series"] if s["metric"] == "train/loss")
    assert loss["steps"] == [int(s) for s, _, _ in STEP.findall(stdout)]
    assert all(t is not None for t in loss["times"])  # progress.jsonl dates every line
