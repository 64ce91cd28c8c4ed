"""The Ray template's choice of port slot (claim_port_slot in ray_slurm.sub.j2), run in bash.

Two Ray jobs whose head shares a host must not start on the same ports. The slot is the
job id's, unless this host holds a claim on it from a job still in the queue or something
listens on its GCS port. ``squeue`` is a stand-in here (the queue's answer is the input);
the listener is a real socket.
"""

from __future__ import annotations

import re
import socket
import subprocess
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

TEMPLATE = Path(__file__).resolve().parents[3] / "src/nemo_runspec/templates/ray_slurm.sub.j2"
SLOTS = 12


def _function() -> str:
    text = TEMPLATE.read_text()
    match = re.search(r"^claim_port_slot\(\) \{.*?^\}$", text, re.M | re.S)
    assert match, "claim_port_slot not found in the Ray template"
    return match.group(0)


def _listening(port: int) -> bool:
    with closing(socket.socket()) as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _free_job_id(start: int) -> int:
    """A job id whose slot, and the slot after it, nothing on this host listens on now
    (Ray jobs of the cluster tests may run beside this test)."""
    for job_id in range(start, start + SLOTS):
        slot = job_id % SLOTS
        if not any(_listening(20000 + (s % SLOTS) * 1000) for s in (slot, slot + 1)):
            return job_id
    pytest.fail("every Ray port slot of this host is in use")


@pytest.fixture
def claim(tmp_path: Path):
    """claim(job_id, queue=[...]) -> (PORT_BASE, PORT_CLAIM) as the template sets them."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    queue = tmp_path / "queue"
    queue.write_text("")
    # squeue -h -j ID -o %i: the id when it is in the queue, nothing otherwise
    (bin_dir / "squeue").write_text(f'#!/bin/sh\ngrep -qx "$3" {queue} && echo "$3"\nexit 0\n')
    (bin_dir / "squeue").chmod(0o755)
    claims = tmp_path / "claims"
    claims.mkdir()

    def run(job_id: int, in_queue: tuple[int, ...] = ()) -> tuple[int, str]:
        queue.write_text("".join(f"{j}\n" for j in in_queue))
        script = f"""set -euo pipefail
PORT_SLOTS={SLOTS} HEAD_IP=127.0.0.1 SLURM_JOB_ID={job_id}
{_function()}
claim_port_slot
echo "$PORT_BASE $PORT_CLAIM"
"""
        proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30,
                              env={"PATH": f"{bin_dir}:/usr/bin:/bin", "NEMOTRON_RAY_CLAIM_DIR": str(claims)})
        assert proc.returncode == 0, proc.stderr
        base, _, path = proc.stdout.strip().partition(" ")
        return int(base), path

    run.claims = claims
    return run


@contextmanager
def _listener(port: int):
    with closing(socket.socket()) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen()
        yield


def _base(slot: int) -> int:
    return 20000 + (slot % SLOTS) * 1000


def test_a_free_host_gives_the_job_ids_slot_and_a_claim_on_it(claim):
    job = _free_job_id(5000)
    base, path = claim(job)
    assert base == _base(job % SLOTS)
    assert Path(path).read_text().strip() == str(job)


def test_a_slot_claimed_by_a_queued_job_is_skipped(claim):
    job = _free_job_id(5000)
    other = job + SLOTS  # same slot
    assert claim(other)[0] == _base(job % SLOTS)
    base, path = claim(job, in_queue=(other,))
    assert base == _base(job % SLOTS + 1)
    assert (claim.claims / f"nemotron-ray-slot-{job % SLOTS}").read_text().strip() == str(other)
    assert Path(path).read_text().strip() == str(job)


def test_a_claim_left_by_a_job_no_longer_queued_is_taken_over(claim):
    job = _free_job_id(5000)
    claim(job + SLOTS)  # that job was killed before its cleanup removed the claim
    base, path = claim(job, in_queue=())
    assert base == _base(job % SLOTS)
    assert Path(path).read_text().strip() == str(job)


def test_the_same_job_again_keeps_its_slot(claim):
    """A requeued attempt (same id) finds its own claim."""
    job = _free_job_id(5000)
    first = claim(job)
    assert claim(job, in_queue=(job,)) == first


def test_a_slot_whose_gcs_port_is_in_use_is_skipped_and_its_claim_dropped(claim):
    job = _free_job_id(5000)
    with _listener(_base(job % SLOTS)):
        base, _ = claim(job)
    assert base == _base(job % SLOTS + 1)
    assert not (claim.claims / f"nemotron-ray-slot-{job % SLOTS}").exists()


def test_every_slot_taken_falls_back_to_the_job_ids_own(claim):
    job = _free_job_id(5000)
    others = tuple(job + 1 + k for k in range(SLOTS))  # one queued job in every slot
    for other in others:  # written as the template writes them: a claim taken through the
        # template would skip a slot a Ray job of the cluster tests listens on just then
        (claim.claims / f"nemotron-ray-slot-{other % SLOTS}").write_text(f"{other}\n")
    base, path = claim(job, in_queue=others)
    assert base == _base(job % SLOTS) and path == ""
