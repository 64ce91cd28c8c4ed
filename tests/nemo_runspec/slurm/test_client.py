"""Slurm client commands run here: stopped at once when they would retry in vain, and by a signal.

Real child processes: Slurm's own clients with ``SLURM_CONF`` pointing at a missing
file (they say they retry for 60 s), and scripts standing in for a slow client.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from nemo_runspec.slurm.client import SlurmConfigUnreadable, hopeless, run_here


@pytest.mark.parametrize("client", ["squeue -h", "sinfo -h", "sacct -n -X", "scancel 1",
                                    "sbatch --wrap true"])
def test_a_missing_slurm_conf_stops_the_client_at_its_first_line(client, tmp_path, monkeypatch):
    if shutil.which(client.split()[0]) is None:
        pytest.skip("Slurm's client tools are not installed")  # pragma: no cover - CI has them
    missing = tmp_path / "nowhere" / "slurm.conf"
    monkeypatch.setenv("SLURM_CONF", str(missing))
    started = time.monotonic()
    with pytest.raises(SlurmConfigUnreadable) as err:
        run_here(client)
    assert time.monotonic() - started < 10  # the client itself would retry for 60 s
    message = str(err.value)
    assert str(missing) in message and "No such file or directory" in message
    assert "\n" not in message


def test_hopeless_reads_the_client_line_and_nothing_else():
    line = ("squeue: error: s_p_parse_file: cannot stat file /etc/x/slurm.conf: No such file or directory, "
            "retrying in 1sec up to 60sec")
    assert "/etc/x/slurm.conf" in str(hopeless(line))
    assert hopeless("slurm_load_jobs error: Unable to contact slurm controller (connect failure)") is None
    assert hopeless("sbatch: error: invalid partition specified: x") is None


def test_output_and_exit_code_come_back_whole(tmp_path):
    code, out, err = run_here("printf 'a|b\\n'; echo oops >&2; exit 3")
    assert (code, out, err) == (3, "a|b\n", "oops\n")


def test_timeout_stops_the_command(tmp_path):
    started = time.monotonic()
    code, _, _ = run_here("sleep 30", timeout=0.5)
    assert code == 124 and time.monotonic() - started < 10


CHILD = textwrap.dedent('''
    import os, sys, threading, time
    from nemo_runspec.runtime import signals
    signals.install()
    mark = sys.argv[1]
    def fire():
        while not os.path.exists(mark):
            time.sleep(0.02)
        os.kill(os.getpid(), int(sys.argv[2]))
    threading.Thread(target=fire, daemon=True).start()
    try:
        if sys.argv[3] == "client":
            from nemo_runspec.slurm.client import run_here
            run_here(f"touch {mark}; sleep 60")
        else:  # a command nemo-run runs through invoke (LocalTunnel, packagers)
            from nemo_runspec._nemo_run import lean
            lean()
            from invoke import Context
            Context().run(f"touch {mark}; sleep 60", hide=True)
    except KeyboardInterrupt as exc:
        print(f"interrupted {signals.exit_code(exc)}")
    else:
        print("not interrupted")
''')


@pytest.mark.parametrize("how", ["client", "invoke"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: signal.Signals(s).name)
def test_a_signal_to_this_process_stops_the_command_at_once(tmp_path, sig, how):
    """The signal reaches only this process (as `kill PID` sends it); the command is stopped,
    not waited for, and the interrupt is not swallowed (invoke used to forward it as \\x03)."""
    mark = tmp_path / "started"
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(mark), str(int(sig)), how], capture_output=True,
                          text=True, timeout=60)
    assert proc.stdout.strip() == f"interrupted {128 + sig}", proc.stderr
    assert time.monotonic() - started < 30
    leftovers = subprocess.run(["pgrep", "-f", f"touch {mark}"], capture_output=True, text=True).stdout.split()
    assert leftovers == []
