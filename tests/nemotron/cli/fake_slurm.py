"""Stand-in ``sacct``, ``squeue`` and ``scancel`` executables for tests of ``nemotron jobs``.

Each job is ``<state dir>/jobs/<id>.json``: ``{"state", "exit", "reason", "nodes",
"in_queue", "in_sacct", "polls", "final", "log", "command"}`` (``command``: the batch
script, squeue's ``%o``). squeue lists jobs ``in_queue``;
each squeue call of a job with ``polls`` > 0 appends ``tick N`` to its ``log`` and
counts down; at 0 the job takes its ``final`` state (``[state, exit]``) and leaves
the queue; after that sacct ignores it ``sacct_lag`` more times. ``no_sacct`` in
the state dir makes sacct fail as without accounting.
Every call is appended to ``calls.log``.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

_COMMON = r'''
import json, os, sys
from pathlib import Path
STATE = Path(os.environ["FAKE_SLURM_DIR"])
with open(STATE / "calls.log", "a") as f:
    f.write(" ".join([os.path.basename(sys.argv[0]), *sys.argv[1:]]) + "\n")
def jobs_arg():
    args = sys.argv[1:]
    for i, a in enumerate(args):
        if a == "-j":
            return args[i + 1].split(",")
    if "--me" in args:  # every job of this user: all the fake knows
        return sorted(p.stem for p in (STATE / "jobs").glob("*.json"))
    return []
def load(job_id):
    p = STATE / "jobs" / f"{job_id}.json"
    return json.loads(p.read_text()) if p.is_file() else None
def save(job_id, job):
    (STATE / "jobs" / f"{job_id}.json").write_text(json.dumps(job))
'''

SACCT = _COMMON + r'''
if (STATE / "no_sacct").exists():
    print("sacct: error: Slurm accounting storage is disabled", file=sys.stderr)
    sys.exit(1)
for job_id in jobs_arg():
    job = load(job_id)
    if job and job.get("sacct_lag") and not job.get("in_queue"):  # accounting lags behind the queue
        job["sacct_lag"] -= 1
        save(job_id, job)
        continue
    if job and job.get("in_sacct", True):
        print("|".join([job_id, job["state"], job.get("exit", "0:0"), job.get("reason", "None"),
                        job.get("nodes", "None assigned"), "2025-01-01T00:00:00", "Unknown"]))
'''

SQUEUE = _COMMON + r'''
ids = jobs_arg()
fmt = sys.argv[sys.argv.index("-o") + 1]
known = 0
for job_id in ids:
    job = load(job_id)
    if job is None:
        continue
    known += 1
    if not job.get("in_queue", False):
        continue
    if job.get("polls"):
        job["polls"] -= 1
        if job.get("log"):
            with open(job["log"], "a") as f:
                f.write(f"tick {job['polls']}\n")
        if job["polls"] == 0:
            job["state"], job["exit"] = job["final"]
            job["in_queue"] = False
        save(job_id, job)
        if not job["in_queue"]:
            continue
    row = {"%i": job_id, "%T": job["state"], "%r": job.get("reason", "None"), "%N": job.get("nodes", ""),
           "%o": job.get("command", "")}
    print("|".join(row[f] for f in fmt.split("|")))
if len(ids) == 1 and not known:
    print("slurm_load_jobs error: Invalid job id specified", file=sys.stderr)
    sys.exit(1)
'''

SCANCEL = _COMMON + r'''
for job_id in sys.argv[1:]:
    job = load(job_id)
    if job is None:
        print(f"scancel: error: Kill job error on job id {job_id}: Invalid job id specified", file=sys.stderr)
        sys.exit(1)
    job.update(state="CANCELLED", exit="0:15", in_queue=False)
    save(job_id, job)
'''


class FakeSlurm:
    """The fake commands in ``bin`` and their state in ``state``."""

    def __init__(self, root: Path) -> None:
        self.bin = root / "fakebin"
        self.state = root / "fakeslurm"
        (self.state / "jobs").mkdir(parents=True)
        self.bin.mkdir()
        for name, body in (("sacct", SACCT), ("squeue", SQUEUE), ("scancel", SCANCEL)):
            path = self.bin / name
            path.write_text(f"#!{sys.executable}\n{body}")
            path.chmod(path.stat().st_mode | stat.S_IXUSR)

    def env(self, **extra: str) -> dict[str, str]:
        """An environment whose PATH finds the fakes first."""
        base = {k: v for k, v in os.environ.items() if not k.startswith("NEMOTRON_")}
        return {**base, "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}",
                "FAKE_SLURM_DIR": str(self.state), "COLUMNS": "250", **extra}

    def job(self, job_id: str, state: str, **fields) -> None:
        data = {"state": state, "in_queue": state in ("PENDING", "RUNNING", "COMPLETING"), **fields}
        (self.state / "jobs" / f"{job_id}.json").write_text(json.dumps(data))

    def read(self, job_id: str) -> dict:
        return json.loads((self.state / "jobs" / f"{job_id}.json").read_text())

    def calls(self) -> list[str]:
        log = self.state / "calls.log"
        return log.read_text().splitlines() if log.is_file() else []

    def no_sacct(self) -> None:
        (self.state / "no_sacct").touch()
