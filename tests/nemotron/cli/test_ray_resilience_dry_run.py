"""[PROFILE.resilience]: what --dry-run shows, offline, for a Ray job (`nemotron nano3 rl`)
and a torchrun job (`nemotron nano3 pretrain`).

Only the Ray driver's srun goes through the resilience helper; the raylets' and the
probes' sruns stay plain, and the template's own teardown stays its EXIT trap. A
torchrun job's whole training srun goes through it.
"""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.nemotron_cli import NEMOTRON


def _dry_run(tmp_path: Path, profile: str, recipe: str = "rl") -> str:
    env_toml = tmp_path / "env.toml"
    env_toml.write_text(textwrap.dedent("""
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

        [bare]
        extends = "gpu"
        container_image = ""
        gpus_per_node = 0

        [plain]
        executor = "slurm"
        account = "acct"
        partition = "gpu"
        nodes = 2
        gpus_per_node = 8
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
    env.update(NEMOTRON_HOME=str(tmp_path / "home"), COLUMNS="250", TMPDIR=str(tmp_path))
    proc = subprocess.run([str(NEMOTRON), "nano3", recipe, "-c", "tiny", "--dry-run", "--batch", profile,
                           "--env-file", str(env_toml)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _script(out: str) -> str:
    """The batch script in the dry run's output, without the native-backend block after it."""
    from nemotron.training.native_plan import TITLE

    script = out[out.index("#!/bin/bash"):]
    return script.split(f"\n{TITLE}\n", 1)[0] + "\n"


def _calls(script: str, command: str) -> list[str]:
    """The lines of the batch script (outside the helper's text) that run ``command``."""
    outside = re.sub(r"<<'NEMOTRON_RUNSPEC_EOF'\n.*?\nNEMOTRON_RUNSPEC_EOF\n", "", script, flags=re.S)
    return [ln.strip() for ln in outside.splitlines()
            if not ln.lstrip().startswith("#") and re.search(rf"(^|[\s(]){command}\b", ln)]


@pytest.mark.parametrize("profile", ["gpu", "bare"])
def test_ray_dry_run_shows_signal_requeue_exclusion_and_watchdog(tmp_path, profile):
    script = _script(_dry_run(tmp_path, profile))
    assert "#SBATCH --signal=B:USR1@600" in script
    assert ("# resilience (docs/resilience.md): --signal=B:USR1@600, requeue up to 4 time(s), failed nodes "
            "excluded (at most 1), watchdog: stall_timeout 900 s; the Ray driver's srun goes through the helper"
            in script)
    assert "NR_MAX_RESTARTS=4 NR_STALL_TIMEOUT=900 NR_STARTUP_TIMEOUT=1800 NR_MAX_EXCLUDED=1" in script
    # (NR_JOB: the job, or one task of an array, which $SLURM_JOB_ID alone is not)
    assert "NR_JOB=${NR_JOB:-$SLURM_JOB_ID}" in script
    assert 'scontrol requeue "$NR_JOB"' in script and 'ExcNodeList="$excluded"' in script
    assert "nemotron_watchdog() {" in script
    assert "nemotron_attempt_begin\ntrap 'nemotron_on_signal USR1' USR1\ntrap 'nemotron_on_signal TERM' TERM\n" in script
    seen = "/nemo_run/" if profile == "gpu" else rf"{re.escape(str(tmp_path / 'home'))}/\S+/nano3-rl/"
    assert re.search(rf"^export NEMOTRON_RESILIENCE_DIR={seen}resilience$", script, re.M)
    assert "export NEMOTRON_RESILIENCE_EXIT_AFTER=13800" in script  # 4 h - 600 s, for NeMo-RL's own timer
    assert "trap cleanup EXIT" in script  # the Ray cluster's teardown, on every attempt


@pytest.mark.parametrize("profile", ["gpu", "bare"])
def test_only_the_driver_srun_goes_through_the_helper(tmp_path, profile):
    script = _script(_dry_run(tmp_path, profile))
    assert not re.search(r"^srun\(\) \{", script, re.M)  # no override of srun for the whole script
    assert _calls(script, "nemotron_srun_start") == [
        'nemotron_srun_start --overlap --nodes=1 --ntasks=1 -w "$HEAD_NODE" $CONTAINER_FLAGS  \\']
    plain = _calls(script, "srun")
    assert any('-w "$node" --output "$LOG_DIR/ray-node-$i.log"' in ln for ln in plain)  # the raylets
    assert any(ln.startswith('have=$(timeout 30 srun --overlap --nodes=1 --ntasks=1 -w "$HEAD_NODE"')
               for ln in plain)  # the probe counting the raylets
    assert not any('-w "$HEAD_NODE" $CONTAINER_FLAGS  \\' in ln for ln in plain)  # the driver's
    # the driver's end is recorded (and requeued) after a normal exit and after a raylet died under it
    assert _calls(script, "nemotron_srun_end") == [
        'nemotron_srun_end "$node" "the raylet on $node died while the driver was running"', "nemotron_srun_end"]
    proc = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stderr


def test_ray_dry_run_without_resilience_has_none_of_it(tmp_path):
    script = _script(_dry_run(tmp_path, "plain"))
    # the resilience helper's functions (the image's name, nemo-rl:...nemotron_3_nano, is not one)
    assert not re.search(r"\bnemotron_(srun|attempt|watchdog|on_signal)", script)
    assert "--signal" not in script and "NEMOTRON_RESILIENCE" not in script
    assert re.search(r'^srun --overlap --nodes=1 --ntasks=1 -w "\$HEAD_NODE" .*\\\n  bash "\$CLUSTER_DIR/driver.sh" &$',
                     script, re.M)


# --- torchrun ----------------------------------------------------------------------------


def test_torchrun_dry_run_shows_signal_requeue_exclusion_and_watchdog(tmp_path):
    out = _dry_run(tmp_path, "gpu", "pretrain")
    script = _script(out)
    assert "# Run with: sbatch --requeue --parsable" in out
    assert "#SBATCH --signal=B:USR1@600" in script
    assert ("# resilience (docs/resilience.md): --signal=B:USR1@600, requeue up to 4 time(s), failed nodes "
            "excluded (at most 1), watchdog: stall_timeout 900 s\n" in script)
    assert re.search(r"^NR_DIR=\S+/resilience NR_MAX_RESTARTS=4 NR_STALL_TIMEOUT=900 NR_STARTUP_TIMEOUT=1800 "
                     r"NR_MAX_EXCLUDED=1$", script, re.M)
    # (NR_JOB: the job, or one task of an array, which $SLURM_JOB_ID alone is not)
    assert "NR_JOB=${NR_JOB:-$SLURM_JOB_ID}" in script
    assert 'scontrol requeue "$NR_JOB"' in script and 'ExcNodeList="$excluded"' in script
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
    script = _script(_dry_run(tmp_path, "plain", "pretrain"))
    assert "torchrun --rdzv-backend" in script
    for text in ("nemotron_srun", "nemotron_attempt_begin", "nemotron_watchdog", "--signal", "NEMOTRON_RESILIENCE"):
        assert text not in script
