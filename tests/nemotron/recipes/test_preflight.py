"""The kit preflight recipe run for real (torchrun + gloo on CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "src/nemotron/recipes/kit/preflight.py"
TORCHRUN = Path(sys.executable).with_name("torchrun")


def _run(tmp_path: Path, cfg: dict, *, nproc: int = 2, env: dict | None = None):
    config = tmp_path / "preflight.yaml"
    report = tmp_path / "report.json"
    cfg = {"report_path": str(report), "timeout_s": 60, **cfg}
    config.write_text(json.dumps({"preflight": cfg}))
    proc = subprocess.run(
        [str(TORCHRUN), f"--nproc-per-node={nproc}", "--standalone",
         str(SCRIPT), "--config", str(config)],
        cwd=tmp_path, capture_output=True, text=True, timeout=180,
        env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})},
    )
    data = json.loads(report.read_text()) if report.exists() else None
    return proc, data


def test_two_ranks_pass_and_allreduce_sum(tmp_path):
    proc, data = _run(tmp_path, {"paths": [str(tmp_path)], "require_env": ["PREFLIGHT_TEST_VAR"]},
                      env={"PREFLIGHT_TEST_VAR": "s3cr3t-value"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert data["ok"] is True and data["world_size"] == 2 and data["backend"] == "gloo"
    assert data["allreduce"] == {"expected": 3.0, "got": 3.0}
    assert sorted(r["rank"] for r in data["ranks"]) == [0, 1]
    assert "preflight passed: 2 rank(s)" in proc.stdout
    # names are reported, values never
    assert "s3cr3t-value" not in proc.stdout + proc.stderr + json.dumps(data)
    assert data["ranks"][0]["env"] == {"PREFLIGHT_TEST_VAR": "present"}


def test_missing_env_and_unwritable_path_fail(tmp_path):
    missing = tmp_path / "nope"
    proc, data = _run(tmp_path, {"paths": [str(missing)], "require_env": ["PREFLIGHT_ABSENT_VAR"]})
    assert proc.returncode != 0
    assert data["ok"] is False
    fails = "\n".join(f for r in data["ranks"] for f in r["failures"])
    assert "PREFLIGHT_ABSENT_VAR is not set" in fails
    assert f"{missing}: missing" in fails
    assert "FAIL rank 0" in proc.stdout and "preflight FAILED" in proc.stdout


def test_expected_gpu_count_mismatch_fails(tmp_path):
    proc, data = _run(tmp_path, {"expect_gpus_per_node": 8}, nproc=1)
    assert proc.returncode != 0
    assert "expected 8 GPU(s), see 0" in data["ranks"][0]["failures"]
