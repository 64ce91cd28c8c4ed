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

import getpass
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.report_browser import Rendered, chromium, render

from .helpers import cli_env

pytestmark = [pytest.mark.slurm]

NEMOTRON = Path(sys.executable).with_name("nemotron")
# long enough that a report taken after step 12 (two CLI calls) finds the job still running: one
# thread per process (fallback.threads) made 30 tiny steps end within those calls
STEPS = 300
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
        #: what the data prep published: (ref, path), as it printed it
        self.published = re.search(r"^published (\S+) \(latest\) -> (\S+)", prep.stdout, re.M).groups()

    def nemotron(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(NEMOTRON), *args], env=self.env, cwd=self.root, text=True,
                              capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def page(self, out_dir: Path, name: str, *refs: str) -> tuple[subprocess.CompletedProcess[str], Rendered]:
        """``nemotron report REFS -o out_dir/name.html``, opened in Chromium (screenshot beside it):
        it must ask for nothing and log no error."""
        page = out_dir / f"{name}.html"
        proc = self.nemotron("report", *refs, "-o", str(page))
        assert proc.returncode == 0, proc.stderr
        shown = render(page, out_dir / f"{name}.png")
        assert shown.requests == [] and shown.errors == []
        return proc, shown

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
                "fallback.eval_interval=50", "fallback.save_interval=50")
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
        running_page = home.root / "running.html"
        running_html = home.nemotron("report", preempted["job_id"], "-o", str(running_page))
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
            "running_html": running_html, "running_page": running_page, "recorded_then": recorded_then}


def test_a_running_job_reports_what_exists_so_far(jobs):
    proc = jobs["running"]
    assert proc.returncode == 0, proc.stderr
    job = json.loads(proc.stdout)["members"][0]["job"]
    assert job["state"] == "RUNNING" and job["ended"] is None
    assert [(a["number"], a["kind"], a["end"]) for a in job["attempts"]] == [(0, "", None)]
    loss = next(s for s in job["series"] if s["metric"] == "train/loss")
    assert 12 <= loss["steps"][-1] <= jobs["recorded_then"] < STEPS  # the steps recorded by then, no more


def test_the_page_of_a_running_job_draws_what_exists_so_far(jobs, tmp_path):
    proc = jobs["running_html"]
    assert proc.returncode == 0, proc.stderr
    shown = render(jobs["running_page"], tmp_path / "running.png")
    assert shown.requests == [] and shown.errors == []
    bars = shown.sources["timeline/bars"]
    assert bars["kind"][-1] == "running" and set(bars["kind"]) <= {"queued", "running"}
    assert bars["end"][-1] > bars["start"][-1]  # the attempt's bar ends at the time of the report
    drawn = shown.series("series/0/train/loss/0")
    steps = Path(jobs["preempted"]["job_dir"]) / "resilience" / "steps.jsonl"
    recorded = {r["step"]: r["loss"] for r in _lines(steps) if r["attempt"] == 0}
    assert 12 <= max(drawn) <= jobs["recorded_then"] < STEPS
    assert drawn == {step: recorded[step] for step in drawn} and sorted(drawn) == list(range(1, max(drawn) + 1))
    assert "RUNNING" in shown.text


def test_preempted_and_requeued_job(jobs, tmp_path):
    home, job = jobs["home"], jobs["preempted"]
    proc, shown = home.page(tmp_path, "preempted", job["job_id"])

    res = Path(job["job_dir"]) / "resilience"
    ends = [r for r in _lines(res / "attempts.jsonl") if r["event"] == "end"]
    # "preempted": training saw the SIGTERM and recorded its checkpoint step; "requeued": on a
    # loaded machine Slurm killed it (KillWait) before it did, and the next attempt recorded the end
    first = ends[0]["kind"]
    assert first in ("preempted", "requeued") and [e["kind"] for e in ends[1:]] == ["completed"], ends
    recorded = {}
    for attempt in (0, 1):
        recorded[attempt] = {r["step"]: r["loss"] for r in _lines(res / "steps.jsonl") if r["attempt"] == attempt}
        assert shown.series(f"series/0/train/loss/{attempt}") == recorded[attempt]
    # the requeue mark: at the step the attempt checkpointed, else where its curve ends
    marked = int(ends[0]["step"]) if str(ends[0].get("step") or "").isdigit() else max(recorded[0])
    assert shown.sources["requeues/0"]["step"] == [marked]
    bars = shown.sources["timeline/bars"]
    assert bars["kind"] == ["queued", first, "completed"]
    assert bars["row"] == ["attempt 0", "attempt 0", "attempt 1"]
    assert bars["start"][2] >= bars["end"][1]  # the second attempt after the first
    kinds = shown.sources["timeline/events"]["kind"]
    assert "requeued" in kinds and "resumed" in kinds and kinds.count("checkpoint") >= 3
    # throughput per attempt, at the steps each attempt's log printed
    for attempt in (0, 1):
        log = next(Path(job["job_dir"]).glob(f"log-*_{job['job_id']}_{attempt}.out")).read_text()
        assert sorted(shown.series(f"series/0/train/tokens_per_sec/{attempt}")) == \
            [int(s) for s, _ in LOGGED.findall(log)]
    assert f"2 attempts ({first})" in proc.stderr


def test_pipe_has_a_row_per_stage_and_its_dependencies(jobs, tmp_path):
    home, pipe = jobs["home"], jobs["pipe"]
    proc, shown = home.page(tmp_path, "pipe", pipe["pipe_id"])
    stages = [s["stage"] for s in pipe["stages"]]
    assert stages == ["prep-pretrain", "pretrain"]
    rows = shown.sources["timeline/bars"]["row"]
    assert [r for r in dict.fromkeys(rows)] == stages
    queued_end = {r: e for r, k, e in zip(rows, shown.sources["timeline/bars"]["kind"],
                                          shown.sources["timeline/bars"]["end"], strict=True) if k == "COMPLETED"}
    starts = {r: s for r, k, s in zip(rows, shown.sources["timeline/bars"]["kind"],
                                      shown.sources["timeline/bars"]["start"], strict=True) if k == "COMPLETED"}
    assert starts["pretrain"] >= queued_end["prep-pretrain"]  # afterok, as the page shows it
    deps = shown.sources["timeline/deps"]  # the arrow: pretrain waited for prep-pretrain
    assert list(zip(deps["from"], deps["to"], strict=True)) == [("prep-pretrain", "pretrain")]
    assert deps["x0"] == [queued_end["prep-pretrain"]] and deps["x1"] == [starts["pretrain"]]
    log = next(Path(pipe["stages"][1]["job_dir"]).glob("log-*_0.out")).read_text()
    assert shown.series("series/1/train/loss/0") == {int(s): float(v) for s, v in LOGGED.findall(log)}
    assert "series/0/train/loss/0" not in shown.sources  # data prep has no training curve
    assert re.search(r"pretrain\s+\d+\s+COMPLETED\s+prep-pretrain", shown.text)


def test_a_set_of_jobs_is_a_sweep_with_the_best_point_marked(jobs, tmp_path):
    home, points = jobs["home"], jobs["points"]
    proc, shown = home.page(tmp_path, "sweep", *[p["job_id"] for p in points])
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


def test_identity_of_a_slurm_job(jobs, tmp_path):
    """Command line, profile and where each setting came from, code hash, provenance, artifacts (linked)."""
    home, job = jobs["home"], jobs["preempted"]
    proc = home.nemotron("report", job["job_id"], "--format", "json")
    assert proc.returncode == 0, proc.stderr
    idn = json.loads(proc.stdout)["members"][0]["job"]["identity"]
    job_dir = Path(job["job_dir"])
    saved = yaml.safe_load((job_dir / "job.yaml").read_text())
    assert idn["command"].startswith(f"nemotron nano3 pretrain -c tiny fallback.max_steps={STEPS} ")
    assert idn["command"].endswith(" --batch res")
    assert idn["profile"] == "res" and idn["env_file"] == home.env["NEMOTRON_ENV_FILE"]
    settings = {s["key"]: (s["value"], s["source"]) for s in idn["settings"]}
    assert settings["time"][0] == "00:15:00" and settings["resilience.max_restarts"][0] == "2"
    sources = saved["run"]["env_sources"]  # where the launcher recorded each value came from
    assert sources["time"] == settings["time"][1] and "[cluster]" in sources["time"]  # extended from
    shared = [k for k in sources if k in settings]  # (sources also names whole tables: env_vars, resilience)
    assert {"time", "resilience.max_restarts", "env_vars.NEMOTRON_TEST_STEP_DELAY"} <= set(shared)
    assert {k: settings[k][1] for k in shared} == {k: sources[k] for k in shared}
    packaged = json.loads((job_dir / "packaging.json").read_text())
    assert idn["code"]["archive_sha256"] == packaged["archive_sha256"] and len(packaged["archive_sha256"]) == 64
    assert idn["provenance"]["user"] == getpass.getuser() and idn["provenance"]["host"] == socket.gethostname()
    ref, path = home.published
    assert [(c["key"], c["path"]) for c in idn["consumed"]] == [("data", path)]
    # the version its first attempt resolved, which the requeued attempt read back (the pipe
    # beside it may have published a newer one in between: artifacts/pins.py)
    [pin_file] = job_dir.rglob(f".artifact-pins-{job['job_id']}.json")
    name = ref.split(":")[0]
    pinned = json.loads(pin_file.read_text())[f"{name}:latest"]
    assert idn["consumed"][0]["ref"].startswith(f"{name}:latest = {pinned} ")

    _, shown = home.page(tmp_path, "identity", job["job_id"])
    assert idn["command"] in shown.text and packaged["archive_sha256"] in shown.text
    html = (tmp_path / "identity.html").read_text()
    assert f'<a href="{Path(path).as_uri()}">' in html  # the consumed artifact, linked
