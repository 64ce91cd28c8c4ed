"""[PROFILE.resilience] for a torchrun job (`nemotron nano3 pretrain`): what --dry-run shows, offline.

The batch script asks for the warning signal, sources the helper, traps the signals
and routes the training srun through the helper (requeue, exclusion, watchdog).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

NEMOTRON = Path(sys.executable).with_name("nemotron")

PROFILES = """
    [gpu]
    executor = "slurm"
    account = "acct"
    partition = "gpu"
    nodes = 2
    gpus_per_node = 8
    time = "04:00:00"

    [gpu.resilience]
    max_restarts = 4
    signal_before = 600
    stall_timeout = 900
    max_excluded_nodes = 1

    [plain]
    executor = "slurm"
    account = "acct"
    partition = "gpu"
    nodes = 2
    gpus_per_node = 8
    time = "04:00:00"
"""


def _dry_run(tmp_path: Path, profile: str) -> str:
    (tmp_path / "env.toml").write_text(textwrap.dedent(PROFILES))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), COLUMNS="250", TMPDIR=str(tmp_path))
    proc = subprocess.run([str(NEMOTRON), "nano3", "pretrain", "-c", "tiny", "--dry-run", "--batch", profile,
                           "--env-file", str(tmp_path / "env.toml")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_torchrun_dry_run_shows_signal_requeue_exclusion_and_watchdog(tmp_path):
    out = _dry_run(tmp_path, "gpu")
    script = out[out.index("#!/bin/bash"):]
    assert "# Run with: sbatch --requeue --parsable" in out
    assert "#SBATCH --signal=B:USR1@600" in script
    assert ("# resilience (docs/resilience.md): --signal=B:USR1@600, requeue up to 4 time(s), failed nodes "
            "excluded (at most 1), watchdog: stall_timeout 900 s" in script)
    assert re.search(r"^NR_DIR=\S+/resilience NR_MAX_RESTARTS=4 NR_STALL_TIMEOUT=900 NR_STARTUP_TIMEOUT=1800 "
                     r"NR_MAX_EXCLUDED=1$", script, re.M)
    assert 'scontrol requeue "$SLURM_JOB_ID"' in script and 'ExcNodeList="$excluded"' in script
    assert "nemotron_watchdog() {" in script
    assert "nemotron_attempt_begin\ntrap 'nemotron_on_signal USR1' USR1\ntrap 'nemotron_on_signal TERM' TERM\n" \
           "srun() { nemotron_srun \"$@\"; }\n" in script
    assert "export NEMOTRON_RESILIENCE_DIR=/nemo_run/resilience" in script
    assert "export NEMOTRON_RESILIENCE_EXIT_AFTER=13800" in script  # 4 h - 600 s, for the native backends
    # the training srun comes after the override, so it goes through the helper
    assert script.index('srun() { nemotron_srun "$@"; }') < script.index("torchrun --rdzv-backend")
    proc = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stderr


def test_torchrun_dry_run_without_resilience_has_none_of_it(tmp_path):
    out = _dry_run(tmp_path, "plain")
    script = out[out.index("#!/bin/bash"):]
    for text in ("nemotron_srun", "nemotron_attempt_begin", "nemotron_watchdog", "--signal", "NEMOTRON_RESILIENCE"):
        assert text not in script
