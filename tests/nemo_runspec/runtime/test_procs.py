"""Process identity (procs): this process named by pid, start time and host."""

from __future__ import annotations

import os

from nemo_runspec.runtime.procs import identity, start_time


def test_identity_names_this_process():
    pid, _, start = identity().partition(":")
    assert int(pid) == os.getpid() and int(start) == start_time(os.getpid())
