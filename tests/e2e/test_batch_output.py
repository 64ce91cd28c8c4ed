"""`--batch` gives scripts what they need on stdout: one JSON line with the job id,
job dir, log and the commands to follow or cancel it (the human summary stays on stderr)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.nemotron_cli import NEMOTRON

from .helpers import cli_env

pytestmark = [pytest.mark.slurm]



def test_batch_prints_one_json_line_a_script_can_use(tmp_path, slurm_cluster):
    env = cli_env(tmp_path, slurm_cluster)
    proc = subprocess.run([str(NEMOTRON), "nano3", "data", "prep", "pretrain", "-c", "tiny", "--batch", "cluster"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout
    record = json.loads(lines[0])
    assert record["job_id"] == re.search(r"Submitted Slurm job (\d+)", proc.stderr).group(1)
    assert Path(record["job_dir"]).is_dir()
    assert slurm_cluster.wait(record["job_id"]).state == "COMPLETED"
    # the commands it names work as given
    follow = subprocess.run(record["follow"].split(), env={**env, "PATH": f"{NEMOTRON.parent}:{env['PATH']}"},
                            cwd=tmp_path, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert follow.returncode == 0 and "published" in follow.stdout, follow.stderr[-2000:]
