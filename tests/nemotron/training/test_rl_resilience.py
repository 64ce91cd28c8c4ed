"""The RL fallback (a Ray job's driver) honours NEMOTRON_RESILIENCE_DIR as pretraining does:
heartbeats, the stop request, the stop checkpoint with exit code 75, and the resumed attempt."""

from __future__ import annotations

import json
from pathlib import Path

from nemotron.training.resilience import EXIT_REQUEUE

from .test_runs import env, run  # noqa: F401 - env is the module's fixture: tiny data in a registry


def _heartbeat(res: Path, attempt: int) -> tuple[str, str]:
    step, phase, *_ = (res / "heartbeat" / f"a{attempt}" / "rank-0").read_text().split()
    return step, phase


def test_rl_fallback_stops_on_the_request_checkpoints_and_resumes(tmp_path, env):  # noqa: F811
    res, job = tmp_path / "resilience", tmp_path / "job"
    res.mkdir()
    (res / "stop_request").write_text("USR1\n")  # what the batch shell's USR1 trap writes
    args = (f"fallback.tokenizer={env['TOKENIZER']}", "fallback.max_steps=8", "fallback.save_interval=0")
    first = run("rl", job, {**env, "NEMOTRON_RESILIENCE_DIR": str(res), "SLURM_RESTART_COUNT": "0"}, *args)
    assert first.returncode == EXIT_REQUEUE, first.stdout + first.stderr
    assert "[rl-smoke] stopped after step 1 to be requeued" in first.stdout
    assert (res / "stopped-a0").read_text() == "1 USR1\n"
    assert [p.name for p in (job / "checkpoints").glob("step_*.pt")] == ["step_00000001.pt"]
    assert _heartbeat(res, 0) == ("1", "stop")

    (res / "stop_request").unlink()  # the next attempt's helper removes it
    second = run("rl", job, {**env, "NEMOTRON_RESILIENCE_DIR": str(res), "SLURM_RESTART_COUNT": "1"}, *args)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "[rl-smoke] resumed from" in second.stdout and "at step 1" in second.stdout
    steps = [json.loads(x) for x in (res / "steps.jsonl").read_text().splitlines()]
    assert [(s["attempt"], s["step"]) for s in steps] == [(0, 1), *((1, n) for n in range(2, 9))]
    assert _heartbeat(res, 1) == ("8", "done")
