"""The resilience helper (templates/resilience.sh) as the Ray template calls it: under
``set -euo pipefail``, the driver's srun started and ended in two calls, with fake Slurm commands."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

from nemo_runspec.slurm import resilience

FAKES = {
    # the task's command is the last argument; srun reports a failed task as the real one does
    "srun": 'bash -c "${@: -1}"; rc=$?\n'
            '[ "$rc" -eq 0 ] || echo "srun: error: n1: task 0: Exited with exit code $rc" >&2\nexit "$rc"',
    "scontrol": 'echo "$*" >> "$CALLS"\n[ "$1" = show ] && echo "JobId=42 Restarts=0"\nexit 0',
    "sacct": "exit 0", "sinfo": "exit 0", "squeue": "exit 0",
}


def _run(tmp_path: Path, driver: str, end: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    bin_dir, res = tmp_path / "bin", tmp_path / "resilience"
    bin_dir.mkdir()
    for name, body in FAKES.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    (tmp_path / "resilience.sh").write_text(resilience.script_text())
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
