"""[PROFILE.resilience]: validation, the batch-script lines it adds, and reading attempt records."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from nemo_runspec.errors import ConfigError
from nemo_runspec.slurm import resilience
from tests.nemotron_cli import NEMOTRON


def _env_show(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    env_toml = tmp_path / "env.toml"
    env_toml.write_text(textwrap.dedent(body))
    return subprocess.run([str(NEMOTRON), "--env-file", str(env_toml), "env", "show", "c"], text=True,
                          capture_output=True, timeout=60, stdin=subprocess.DEVNULL)


BASE = """
    [c]
    executor = "slurm"
    time = "00:10:00"
"""


@pytest.mark.parametrize("extra, needle", [
    ("[c.resilience]\nsignal_before = \"5m\"\n", "resilience.signal_before' in [c] must be integer"),
    ("[c.resilience]\nmax_restart = 3\n", "max_restart"),
    ("[c.resilience]\nsignal_before = 900\n", "must be below the time limit (00:10:00 = 600 s)"),
    ("retries = 2\n[c.resilience]\n", "remove retries"),
    ("sbatch_options = { signal = \"USR2@60\" }\n[c.resilience]\n", "set by resilience"),
])
def test_bad_settings_are_one_line_errors_naming_the_key(tmp_path, extra, needle):
    proc = _env_show(tmp_path, BASE + extra)
    assert proc.returncode != 0
    assert proc.stderr.startswith("error: ") and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert needle in proc.stderr and "Traceback" not in proc.stderr


def test_settings_defaults_and_signal_option():
    assert resilience.settings_of({}) is None
    s = resilience.settings_of({"resilience": {"stall_timeout": 60}})
    assert (s.max_restarts, s.signal_before, s.stall_timeout, s.startup_timeout) == (3, 300, 60, 1800)
    assert s.signal_option == "B:USR1@300"
    with pytest.raises(ConfigError):
        resilience.settings_of({"resilience": "yes"})


def test_script_lines_quote_the_job_dir_and_set_the_knobs():
    lines = resilience.setup_lines("/jobs/a b/resilience", resilience.Resilience(max_restarts=4, stall_timeout=30))
    assert "NR_DIR='/jobs/a b/resilience' NR_MAX_RESTARTS=4 NR_STALL_TIMEOUT=30" in lines
    assert ". '/jobs/a b/resilience/resilience.sh'" in lines
    assert lines.rstrip().endswith('srun() { nemotron_srun "$@"; }')
    no_watchdog = resilience.setup_lines("/j", resilience.Resilience())
    assert "NR_STALL_TIMEOUT=0" in no_watchdog and "no watchdog" in no_watchdog


def test_the_helper_is_valid_bash():
    proc = subprocess.run(["bash", "-n"], input=resilience.script_text(), text=True, capture_output=True)
    assert proc.returncode == 0, proc.stderr


