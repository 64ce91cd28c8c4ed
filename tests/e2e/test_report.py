"""`nemotron report` of real jobs on the local two-node cluster, opened in headless Chromium.

Submitted together, then reported when all have ended:

- a tiny pipe (``--stages prep-pretrain:pretrain``: the Ray data prep, then the
  pretraining that consumes its output);
- a resilient pretrain preempted mid-run (``scontrol requeue`` from outside, as
  tests/e2e/test_resilience.py does) that resumes in a second attempt;
- two tiny pretrains that differ in one override, reported together as the
  points of a sweep (sweeps of their own are not there yet: a set of jobs).

What each page must show is read by the test from the job's own files (its log,
``resilience/steps.jsonl`` and ``attempts.jsonl``) and from ``sacct``, with its
own patterns. Screenshots go to each test's tmp dir.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.report_browser import chromium, render

from .helpers import cli_env

pytestmark = [pytest.mark.slurm]

NEMOTRON = Path(sys.executable).with_name("nemotron")
STEPS = 30
FINAL_EVAL = re.compile(r"\[pretrain\] final eval loss ([\d.]+)")
LOGGED = re.compile(r"\[pretrain\] step (\d+)/\d+ \| loss ([\d.]+) \|")


class Home:
    """NEMOTRON_HOME, env.toml (a plain and a resilient profile) and the tiny pretrain data."""

    def __init__(self, root: Path, cluster) -> None:
        self.root = root
        self.env = cli_env(root, cluster, f"""
            nodes = 1
            batch_partition = "{cluster.batch_partition}"

            [res]
            extends = "cluster"
            env_vars = {{ NEMOTRON_TEST_STEP_DELAY = "0.25" }}

            [res.resilience]
            max_restarts = 2
            signal_before = 60
        """, time="00:15:00")
        prep = self.nemotron("nano3", "data", "prep", "pretrain", "-c", "tiny")
        assert prep.returncode == 0, prep.stderr[-2000:]

    def nemotron(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(NEMOTRON), *args], env=self.env, cwd=self.root, text=True,
                              capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def batch(self, *args: str) -> dict:
        proc = self.nemotron(*args)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def _state(job_id: str) -> str:
    out = subprocess.run(["sacct", "-n", "-P", "-X", "-j", job_id, "-o", "State"], capture_output=True,
                         text=True).stdout.split()
    queued = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True).stdout
    return "" if queued.strip() else (out[0] if out else "")


@pytest.fixture(scope="module")
def jobs(tmp_path_factory, slurm_cluster) -> dict:
    chromium()  # skip before submitting anything when there is no browser
    home = Home(tmp_path_factory.mktemp("report"), slurm_cluster)
    pretrain = ("nano3", "pretrain", "-c", "tiny", f"fallback.max_steps={STEPS}", "fallback.log_interval=5",
                "fallback.eval_interval=10", "fallback.save_interval=10")
    pipe = home.batch("nano3", "pipe", "-c", "tiny", "--stages", "prep-pretrain:pretrain", "--batch", "cluster",
                      "pretrain.fallback.max_steps=10")
    preempted = home.batch(*pretrain, "--batch", "res")
    points = [home.batch(*pretrain, f"fallback.lr={lr}", "--batch", "cluster") for lr in ("0.003", "0.0003")]
    ids = [s["job_id"] for s in pipe["stages"]] + [preempted["job_id"]] + [p["job_id"] for p in points]
    try:
        steps = Path(preempted["job_dir"]) / "resilience" / "steps.jsonl"
        deadline = time.monotonic() + 600
        while len(_lines(steps)) < 12 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert len(_lines(steps)) >= 12, "the resilient job never reached step 12"
        running = home.nemotron("report", preempted["job_id"], "--format", "json")  # mid-run: what exists so far
        recorded_then = len(_lines(steps))
        assert subprocess.run(["scontrol", "requeue", preempted["job_id"]]).returncode == 0
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline and not all(_state(i) not in ("", "RUNNING", "PENDING", "REQUEUED")
                                                      for i in ids):
            time.sleep(1)
    finally:
        subprocess.run(["scancel", *ids], capture_output=True)
    states = {i: _state(i) for i in ids}
    assert set(states.values()) == {"COMPLETED"}, states
    return {"home": home, "pipe": pipe, "preempted": preempted, "points": points, "running": running,
            "recorded_then": recorded_then}


def test_a_running_job_reports_what_exists_so_far(jobs):
    proc = jobs["running"]
    assert proc.returncode == 0, proc.stderr
    job = json.loads(proc.stdout)["members"][0]["job"]
    assert job["state"] == "RUNNING" and job["ended"] is None
    assert [(a["number"], a["kind"], a["end"]) for a in job["attempts"]] == [(0, "", None)]
    loss = next(s for s in job["series"] if s["metric"] == "train/loss")
    assert 12 <= loss["steps"][-1] <= jobs["recorded_then"] < STEPS  # the steps recorded by then, no more


def test_preempted_and_requeued_job(jobs, tmp_path):
    home, job = jobs["home"], jobs["preempted"]
    page = tmp_path / "preempted.html"
    proc = home.nemotron("report", job["job_id"], "-o", str(page))
    assert proc.returncode == 0, proc.stderr
    shown = render(page, tmp_path / "preempted.png")
    assert shown.requests == [] and shown.errors == []

    res = Path(job["job_dir"]) / "resilience"
    ends = [r for r in _lines(res / "attempts.jsonl") if r["event"] == "end"]
    assert [e["kind"] for e in ends] == ["preempted", "completed"]
    for attempt in (0, 1):
        recorded = {r["step"]: r["loss"] for r in _lines(res / "steps.jsonl") if r["attempt"] == attempt}
        assert shown.series(f"series/0/train/loss/{attempt}") == recorded
    assert shown.sources["requeues/0"]["step"] == [int(ends[0]["step"])]
    bars = shown.sources["timeline/bars"]
    assert bars["kind"] == ["queued", "preempted", "completed"]
    assert bars["row"] == ["attempt 0", "attempt 0", "attempt 1"]
    assert bars["start"][2] >= bars["end"][1]  # the second attempt after the first
    kinds = shown.sources["timeline/events"]["kind"]
    assert "requeued" in kinds and "resumed" in kinds and kinds.count("checkpoint") >= 3
    # throughput per attempt, at the steps each attempt's log printed
    for attempt in (0, 1):
        log = next(Path(job["job_dir"]).glob(f"log-*_{job['job_id']}_{attempt}.out")).read_text()
        assert sorted(shown.series(f"series/0/train/tokens_per_sec/{attempt}")) == \
            [int(s) for s, _ in LOGGED.findall(log)]
    assert "2 attempts (preempted)" in proc.stderr


def test_pipe_has_a_row_per_stage_and_its_dependencies(jobs, tmp_path):
    home, pipe = jobs["home"], jobs["pipe"]
    page = tmp_path / "pipe.html"
    proc = home.nemotron("report", pipe["pipe_id"], "-o", str(page))
    assert proc.returncode == 0, proc.stderr
    shown = render(page, tmp_path / "pipe.png")
    assert shown.requests == [] and shown.errors == []
    stages = [s["stage"] for s in pipe["stages"]]
    assert stages == ["prep-pretrain", "pretrain"]
    rows = shown.sources["timeline/bars"]["row"]
    assert [r for r in dict.fromkeys(rows)] == stages
    queued_end = {r: e for r, k, e in zip(rows, shown.sources["timeline/bars"]["kind"],
                                          shown.sources["timeline/bars"]["end"], strict=True) if k == "COMPLETED"}
    starts = {r: s for r, k, s in zip(rows, shown.sources["timeline/bars"]["kind"],
                                      shown.sources["timeline/bars"]["start"], strict=True) if k == "COMPLETED"}
    assert starts["pretrain"] >= queued_end["prep-pretrain"]  # afterok, as the page shows it
    log = next(Path(pipe["stages"][1]["job_dir"]).glob("log-*_0.out")).read_text()
    assert shown.series("series/1/train/loss/0") == {int(s): float(v) for s, v in LOGGED.findall(log)}
    assert "series/0/train/loss/0" not in shown.sources  # data prep has no training curve
    assert re.search(r"pretrain\s+\d+\s+COMPLETED\s+prep-pretrain", shown.text)


def test_a_set_of_jobs_is_a_sweep_with_the_best_point_marked(jobs, tmp_path):
    home, points = jobs["home"], jobs["points"]
    page = tmp_path / "sweep.html"
    proc = home.nemotron("report", *[p["job_id"] for p in points], "-o", str(page))
    assert proc.returncode == 0, proc.stderr
    shown = render(page, tmp_path / "sweep.png")
    assert shown.requests == [] and shown.errors == []
    finals = []
    for i, p in enumerate(points):
        log = next(Path(p["job_dir"]).glob("log-*_0.out")).read_text()
        finals.append(float(FINAL_EVAL.search(log).group(1)))
        assert shown.series(f"series/{i}/train/loss/all") == {int(s): float(v) for s, v in LOGGED.findall(log)}
        assert max(shown.series(f"series/{i}/eval/loss/all")) == STEPS
    best = finals.index(min(finals))
    assert f"point {best} [fallback.lr=" in proc.stderr and "<- best" in proc.stderr.splitlines()[best]
    assert re.search(rf"★ best\s+point {best}\s", shown.text)
    assert "fallback.lr" in shown.text and "0.0003" in shown.text
    assert shown.sources["timeline/bars"]["row"].count(f"point {best}") >= 1
