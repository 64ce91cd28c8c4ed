"""A report reads a job dir over the job's SSH tunnel exactly as it reads one here.

The job dir (the files a resilient job with two attempts leaves, and a log far
longer than what crosses the network) is read with the one command of
``nemo_runspec.report.jobfiles`` twice: through ``Remote.run`` over real SSH to the
local sshd, and here. Both must give the same files, lines and listing.
"""

from __future__ import annotations

import json

import pytest

from nemo_runspec.report import jobfiles
from nemo_runspec.slurm import jobs as sj
from nemo_runspec.slurm.remote import Remote

pytestmark = [pytest.mark.slurm, pytest.mark.ssh]


def test_job_files_over_ssh_are_those_read_here(tmp_path, ssh_target):
    job_dir = tmp_path / "job dir with a space"
    (job_dir / "resilience").mkdir(parents=True)
    (job_dir / "nsys").mkdir()
    (job_dir / "nsys" / "profile_1_7_node0_rank0.nsys-rep").write_bytes(b"x")
    (job_dir / "job.yaml").write_text("run:\n  profile: cluster\n")
    (job_dir / "resilience" / "attempts.jsonl").write_text(
        json.dumps({"event": "start", "attempt": 0, "t": 1.0}) + "\n")
    noise = "".join(f"[default0]:noise line {i}\n" for i in range(5000))
    (job_dir / "log-nemotron-x_7_0.out").write_text(
        "[default0]:[pretrain] step 5/10 | loss 7.5000 | lr 1.00e-03 | 900 tok/s\n" + noise
        + "[default0]:published x-model:v1 (latest) -> /reg/x  [registry: /reg]\nerror: the end\n")
    remote = Remote.for_profile({"tunnel": "ssh", "host": ssh_target.host, "port": ssh_target.port,
                                 "user": ssh_target.user, "identity": str(ssh_target.identity),
                                 "remote_job_dir": str(tmp_path)})
    try:
        over_ssh = jobfiles.read_with(remote.run, str(job_dir))
    finally:
        sj.close(remote)
    here = jobfiles.read_here(str(job_dir))
    assert over_ssh == here
    log = "log-nemotron-x_7_0.out"
    assert over_ssh.lines[log] == ["[default0]:[pretrain] step 5/10 | loss 7.5000 | lr 1.00e-03 | 900 tok/s",
                                   "[default0]:published x-model:v1 (latest) -> /reg/x  [registry: /reg]"]
    assert over_ssh.tails[log][-1] == "error: the end" and len(over_ssh.tails[log]) == jobfiles.TAIL_LINES
    assert over_ssh.listed == ["nsys/profile_1_7_node0_rank0.nsys-rep"]
    assert json.loads(over_ssh.whole["resilience/attempts.jsonl"].strip())["attempt"] == 0
