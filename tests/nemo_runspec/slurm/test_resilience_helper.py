"""The resilience helper (templates/resilience.sh) as the Ray template calls it: under
``set -euo pipefail``, the driver's srun started and ended in two calls, with fake Slurm commands."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from nemo_runspec.slurm import resilience

FAKES = {
    # the task's command is the last argument; srun reports a failed task as the real one does
    "srun": 'bash -c "${@: -1}"; rc=$?\n'
            '[ "$rc" -eq 0 ] || echo "srun: error: n1: task 0: Exited with exit code $rc" >&2\nexit "$rc"',
    # every call is logged; `show hostnames` expands the n[1-2] allocation of the tests below
    "scontrol": 'echo "$*" >> "$CALLS"\ncase "$1 $2" in\n"show hostnames") echo n1; echo n2 ;;\n'
                '"show job") echo "JobId=42 Restarts=0" ;;\nesac\nexit 0',
    "sacct": "exit 0", "sinfo": "exit 0", "squeue": "exit 0",
}


def _install(tmp_path: Path) -> tuple[Path, Path]:
    """The fake Slurm commands in ``tmp_path/bin`` and the helper in ``tmp_path/resilience.sh``;
    returns (bin dir, resilience dir)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in FAKES.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    (tmp_path / "resilience.sh").write_text(resilience.script_text())
    return bin_dir, tmp_path / "resilience"


def _run(tmp_path: Path, driver: str, end: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    bin_dir, res = _install(tmp_path)
    script = textwrap.dedent(f"""
        set -euo pipefail
        export PATH="{bin_dir}:$PATH" CALLS="{tmp_path}/calls" SLURM_JOB_ID=42 SLURM_JOB_NODELIST=n1
        NR_DIR={res} NR_MAX_RESTARTS=2 NR_STALL_TIMEOUT=4 NR_STARTUP_TIMEOUT=60 NR_MAX_EXCLUDED=2
        . {tmp_path}/resilience.sh
        nemotron_attempt_begin
        set +e
        nemotron_srun_start --overlap -w n1 {driver!r}
        DRIVER_PID=$NR_SRUN_PID
        wait "$DRIVER_PID"
        {end}
        echo "status $?"
    """)
    proc = subprocess.run(["bash", "-c", script], text=True, capture_output=True, timeout=60)
    return proc, res


def _end(res: Path) -> dict:
    return [json.loads(x) for x in (res / "attempts.jsonl").read_text().splitlines()][-1]


def test_a_failure_the_template_saw_is_recorded_with_its_node_and_requeued(tmp_path):
    proc, res = _run(tmp_path, "echo out; echo err >&2; exit 7",
                     'nemotron_srun_end n2 "the raylet on n2 died while the driver was running"')
    assert proc.stdout.splitlines()[-1] == "status 0", proc.stdout + proc.stderr
    end = _end(res)
    assert (end["kind"], end["node"], end["requeue"], end["exclude"]) == ("failed", "n2", True, "n2")
    assert end["reason"] == "the raylet on n2 died while the driver was running; exit code 7"
    calls = (tmp_path / "calls").read_text().splitlines()
    assert "requeue 42" in calls and "update jobid=42 ExcNodeList=n2" in calls
    assert "update jobid=42 StartTime=now" in calls
    # the driver's output reaches the log as it comes; its stderr is also kept for the record
    assert "out" in proc.stdout.splitlines() and "err" in proc.stderr.splitlines()
    assert "err\nsrun: error: n1: task 0" in (res / "srun-a0.err").read_text()


def test_a_driver_that_completes_is_recorded_and_not_requeued(tmp_path):
    proc, res = _run(tmp_path, "echo done", "nemotron_srun_end")
    assert proc.stdout.splitlines()[-1] == "status 0", proc.stdout + proc.stderr
    assert (_end(res)["kind"], _end(res)["requeue"]) == ("completed", False)
    assert "requeue" not in (tmp_path / "calls").read_text()


def _begin(tmp_path: Path, attempt: int, excluded: list[str], prior: list[dict], max_restarts: int = 1):
    """Run nemotron_attempt_begin for attempt ``attempt`` on nodes n[1-2], then a stand-in for training."""
    bin_dir, res = _install(tmp_path)
    res.mkdir(exist_ok=True)
    (res / "attempts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in prior))
    if excluded:
        (res / "excluded").write_text("".join(n + "\n" for n in excluded))
    script = textwrap.dedent(f"""
        set -euo pipefail
        export PATH="{bin_dir}:$PATH" CALLS="{tmp_path}/calls" SLURM_JOB_ID=42 SLURM_JOB_NODELIST='n[1-2]'
        export SLURM_RESTART_COUNT={attempt}
        NR_DIR={res} NR_MAX_RESTARTS={max_restarts} NR_STALL_TIMEOUT=0 NR_STARTUP_TIMEOUT=60 NR_MAX_EXCLUDED=2
        . {tmp_path}/resilience.sh
        nemotron_attempt_begin
        echo trained
    """)
    proc = subprocess.run(["bash", "-c", script], text=True, capture_output=True, timeout=60)
    calls = (tmp_path / "calls").read_text().splitlines() if (tmp_path / "calls").exists() else []
    records = [json.loads(x) for x in (res / "attempts.jsonl").read_text().splitlines()]
    return proc, calls, records


def _closed(attempt: int, kind: str = "failed") -> list[dict]:
    return [{"event": "start", "attempt": attempt, "nodes": "n2"},
            {"event": "end", "attempt": attempt, "kind": kind, "requeue": True}]


def test_an_attempt_placed_on_an_excluded_node_moves_without_training(tmp_path):
    """Slurm refuses ExcNodeList until a requeued job is pending; if the exclusion came too
    late and the job is placed on the node anyway, the attempt must not train there."""
    proc, calls, records = _begin(tmp_path, 1, ["n2"], _closed(0))
    assert proc.returncode == 0, proc.stderr
    assert "trained" not in proc.stdout
    assert "placed on excluded node(s) n2" in proc.stdout
    end = records[-1]
    assert (end["event"], end["attempt"], end["kind"], end["requeue"]) == ("end", 1, "moved", True)
    assert "n2" in end["reason"] and end["exclude"] == "n2"
    assert calls.index("requeue 42") < calls.index("update jobid=42 ExcNodeList=n2")


def test_an_attempt_on_nodes_not_excluded_trains(tmp_path):
    proc, calls, records = _begin(tmp_path, 1, ["n3"], _closed(0))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "trained"
    assert records[-1]["event"] == "start" and "requeue 42" not in calls


@pytest.mark.parametrize("moves, trains", [(3, True), (4, False)])
def test_moves_are_free_restarts_up_to_three(tmp_path, moves, trains):
    """max_restarts = 1: attempt 0 failed, then ``moves`` moved attempts; the next one runs only
    while at most three moves are forgiven (4 - 3 = 1 restart used, 5 - 3 = 2 > 1)."""
    prior = _closed(0)
    for a in range(1, moves + 1):
        prior += _closed(a, "moved")
    proc, calls, records = _begin(tmp_path, moves + 1, [], prior)
    if trains:
        assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "trained", proc.stdout + proc.stderr
    else:
        assert proc.returncode == 1 and "trained" not in proc.stdout
        assert records[-1]["kind"] == "exhausted"


@pytest.mark.parametrize("stopped, kind, step", [("11 TERM", "preempted", "11"), ("7 USR1", "timelimit", "7"),
                                                 (None, "requeued", "")])
def test_an_attempt_killed_before_its_record_is_closed_by_the_next_from_what_training_saw(
        tmp_path, stopped, kind, step):
    """Slurm's KillWait ran out while attempt 0 (which had saved its checkpoint on the signal)
    was still writing its end: the next attempt records it, from the signal training saw."""
    res = tmp_path / "resilience"
    res.mkdir()
    if stopped:
        (res / "stopped-a0").write_text(stopped + "\n")
    proc, _, records = _begin(tmp_path, 1, [], [{"event": "start", "attempt": 0, "nodes": "n1"}])
    assert proc.returncode == 0, proc.stderr
    end = next(r for r in records if r["event"] == "end")
    assert (end["attempt"], end["kind"], end["step"], end["requeue"]) == (0, kind, step, True)
    assert end["reason"].endswith("; recorded by the next attempt")
    if stopped:
        assert f"checkpoint at step {step}" in end["reason"]
    assert records[-1]["event"] == "start" and proc.stdout.splitlines()[-1] == "trained"


def _watch(tmp_path: Path, driver: str, *, stall: int = 1, max_excluded: int = 2,
           excluded: tuple[str, ...] = ()) -> tuple[subprocess.CompletedProcess[str], Path, float]:
    """One attempt through nemotron_srun (watchdog on, ``stall`` s) running ``driver`` as the
    training step; returns the run, the resilience dir and its wall time."""
    bin_dir, res = _install(tmp_path)
    res.mkdir()
    if excluded:
        (res / "excluded").write_text("".join(n + "\n" for n in excluded))
    script = textwrap.dedent(f"""
        set -euo pipefail
        export PATH="{bin_dir}:$PATH" CALLS="{tmp_path}/calls" SLURM_JOB_ID=42 SLURM_JOB_NODELIST=n1
        NR_DIR={res} NR_MAX_RESTARTS=2 NR_STALL_TIMEOUT={stall} NR_STARTUP_TIMEOUT=60 NR_MAX_EXCLUDED={max_excluded}
        . {tmp_path}/resilience.sh
        nemotron_attempt_begin
        set +e
        nemotron_srun {driver!r}
        echo "status $?"
    """)
    import time

    t0 = time.monotonic()
    proc = subprocess.run(["bash", "-c", script], text=True, capture_output=True, timeout=60)
    return proc, res, time.monotonic() - t0


def _beat(res: Path, step: int, phase: str) -> str:
    """Shell: write rank 0's heartbeat record as training does (step phase time node rank)."""
    return f'printf "{step} {phase} %s n1 0\\n" "$(date +%s)" > {res}/heartbeat/a0/rank-0'


@pytest.mark.parametrize("phase", ["init", "save", "eval", "between", "native"])
def test_the_watchdog_spares_start_up_checkpoints_evaluation_and_native_runs(tmp_path, phase):
    """A rank 4 s into a phase with startup_timeout (60 s) or none is not a stall at stall_timeout 1 s."""
    res = tmp_path / "resilience"
    driver = f"{_beat(res, 3, phase)}; sleep 4; {_beat(res, 3, 'done')}"
    proc, res, _ = _watch(tmp_path, driver)
    assert proc.stdout.splitlines()[-1] == "status 0", proc.stdout + proc.stderr
    assert not (res / "stall-a0").exists()
    assert (_end(res)["kind"], _end(res)["requeue"]) == ("completed", False)


def test_the_watchdog_ends_a_step_whose_heartbeat_stops_within_its_bound(tmp_path):
    """Phase ``step`` older than stall_timeout: the attempt ends within stall_timeout + one poll
    period (stall_timeout / 4, 1..10 s) + 1 s of clock rounding, named and requeued."""
    res = tmp_path / "resilience"
    # the "rank" stays alive until srun is killed (it is its child here)
    driver = f"{_beat(res, 7, 'step')}; while kill -0 $PPID 2>/dev/null; do sleep 0.2; done"
    proc, res, wall = _watch(tmp_path, driver, stall=2)
    stall = (res / "stall-a0").read_text().split()
    assert stall[:3] == ["7", "0", "n1"] and stall[4:6] == ["step", "2"]
    end = _end(res)
    assert end["kind"] == "stall" and end["requeue"] is True and end["node"] == "n1"
    assert end["reason"].startswith("rank 0 on n1 stalled (last heartbeat: step 7, step;")
    assert wall < 2 + 1 + 1 + 3  # + 3 s for bash start-up and the record on this shared machine
    assert "requeue 42" in (tmp_path / "calls").read_text()


@pytest.mark.parametrize(("code", "requeue"), [(1, True), (2, False), (3, False)])
def test_a_rank_that_died_excludes_its_node_unless_the_error_is_the_config(tmp_path, code, requeue):
    """srun names the node of the first failed task; exit 2/3 (config or backend error) is not
    restarted and excludes nothing."""
    proc, res, _ = _watch(tmp_path, f"exit {code}", stall=0)
    end = _end(res)
    assert (end["kind"], end["requeue"], end["exit_code"]) == ("failed", requeue, code)
    assert end["node"] == ("n1" if requeue else "")
    assert end["exclude"] == ("n1" if requeue else "")
    assert ("a config or backend error, not restarted" in end["reason"]) is not requeue
    calls = (tmp_path / "calls").read_text() if (tmp_path / "calls").exists() else ""
    assert ("update jobid=42 ExcNodeList=n1" in calls) is requeue


def test_exclusions_stop_at_max_excluded_nodes(tmp_path):
    """Two nodes already excluded, the limit 2: a third failed node is not excluded (said why),
    and the job is still requeued."""
    proc, res, _ = _watch(tmp_path, "exit 1", stall=0, excluded=("n3", "n4"))
    end = _end(res)
    assert (end["kind"], end["requeue"], end["node"], end["exclude"]) == ("failed", True, "n1", "n3,n4")
    assert "not excluding n1: resilience.max_excluded_nodes (2) reached" in proc.stderr
    assert (res / "excluded").read_text().split() == ["n3", "n4"]


@pytest.mark.parametrize("code", [2, 3])
def test_a_config_or_backend_error_is_recorded_and_not_restarted(tmp_path, code):
    """docs/resilience.md: exit codes 2 and 3 (a config or data error, a missing backend)
    are not restarted: a requeue would fail the same way."""
    proc, res = _run(tmp_path, f"exit {code}", "nemotron_srun_end")
    assert proc.stdout.splitlines()[-1] == f"status {code}", proc.stdout + proc.stderr  # the job ends with it
    end = _end(res)
    assert (end["kind"], end["requeue"], end["exit_code"]) == ("failed", False, code)
    assert end["reason"].endswith("a config or backend error, not restarted"), end
    assert "requeue" not in (tmp_path / "calls").read_text()


def test_any_other_failing_exit_code_is_restarted(tmp_path):
    """The control of the test above: the same driver with exit 4 is requeued."""
    proc, res = _run(tmp_path, "exit 4", "nemotron_srun_end")
    assert proc.stdout.splitlines()[-1] == "status 0", proc.stdout + proc.stderr
    assert (_end(res)["kind"], _end(res)["requeue"]) == ("failed", True)
    assert "requeue 42" in (tmp_path / "calls").read_text().splitlines()
