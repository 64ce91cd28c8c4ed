"""What is printed after a submission (slurm/summary.py): bracketed text from users and Slurm is shown whole."""

from __future__ import annotations

from nemo_runspec.slurm import monitor
from tests.nemo_runspec.slurm.test_monitor import _console, _submitted


def test_bracketed_text_from_users_and_slurm_is_shown_whole(tmp_path, monkeypatch):
    """Rich markup must not eat [d]etach, node lists or names with brackets."""
    from nemo_runspec.slurm.summary import print_submission

    sub = _submitted(tmp_path)
    sub.name = "exp[d]one"
    sub.state, sub.reason = "PENDING", "ReqNodeNotAvail, UnavailableNodes:n[1-2],[c]x"
    console, buf = _console()
    print_submission(sub, console)
    monitor.detach(sub, console)
    shown = buf.getvalue()
    assert "(exp[d]one)" in shown
    assert "pending (ReqNodeNotAvail, UnavailableNodes:n[1-2],[c]x)" in shown
    sub.state, sub.nodes = "RUNNING", "gpu[01-04]"
    assert monitor.describe_state(sub) == "running on gpu[01-04]"
    sub.state, sub.reason = "PENDING", "None"
    assert monitor.describe_state(sub) == "pending"
