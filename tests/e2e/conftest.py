"""Session fixtures for the local Slurm cluster and sshd (scripts/slurm-cluster.sh).

`slurm_cluster` and `ssh_target` check the cluster once per session with
`scripts/slurm-cluster.sh status`. When it is not healthy they skip, telling the
developer to run `scripts/slurm-cluster.sh up`, except under CI=true where the
tests must run, so the fixture fails with the status output instead.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import container_stack

REPO_ROOT = Path(__file__).resolve().parents[2]
CLUSTER_SCRIPT = REPO_ROOT / "scripts" / "slurm-cluster.sh"
DEFAULT_STATE = "/var/tmp/nemotron-slurm"

# sacct states after which a job will not change any more.
TERMINAL_STATES = {
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
    "OUT_OF_MEMORY", "PREEMPTED", "TIMEOUT",
}


def _run(cmd: list[str], *, timeout: float = 60, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, **kw)


@dataclass(frozen=True)
class JobResult:
    """Final accounting record of a job, as `sacct -X` reports it."""

    job_id: str
    state: str        # e.g. "COMPLETED", "FAILED", "CANCELLED" (without " by <uid>")
    exit_code: str    # "<code>:<signal>", e.g. "0:0", "3:0"


@dataclass(frozen=True)
class SlurmCluster:
    """The running local cluster, as discovered from `sinfo` / `scontrol`."""

    cluster_name: str
    hostname: str
    state_dir: Path
    account: str
    nodes: tuple[str, ...]
    partitions: tuple[str, ...]
    default_partition: str
    run_partition: str      # for attached runs (--run)
    batch_partition: str    # for detached runs (--batch)

    def sbatch(self, *args: str, cwd: Path | str | None = None) -> str:
        """Run `sbatch --parsable -A <account> ARGS...` and return the job id.

        Fails the test with sbatch's stderr when submission is rejected.
        """
        proc = _run(["sbatch", "--parsable", f"--account={self.account}", *args], cwd=cwd)
        if proc.returncode != 0:
            pytest.fail(f"sbatch {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
        return proc.stdout.strip().split(";")[0]

    def job_result(self, job_id: str) -> JobResult | None:
        """The job's sacct record, or None while sacct does not know it yet."""
        proc = _run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State,ExitCode"])
        lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
        if proc.returncode != 0 or not lines:
            return None
        state, exit_code = lines[0].split("|")
        return JobResult(job_id, state.split()[0], exit_code)

    def wait(self, job_id: str, timeout: float = 180) -> JobResult:
        """Poll sacct until the job reaches a terminal state; fail the test on timeout."""
        deadline = time.monotonic() + timeout
        result = None
        while time.monotonic() < deadline:
            result = self.job_result(job_id)
            if result and result.state in TERMINAL_STATES:
                return result
            time.sleep(0.5)
        queue = _run(["squeue", "-h", "-o", "%i %T %r %j"]).stdout
        pytest.fail(f"job {job_id} not finished after {timeout}s (last: {result});"
                    f" queue:\n{queue}")


@dataclass(frozen=True)
class SSHTarget:
    """sshd on the loopback address, root login with a dedicated key."""

    host: str
    port: int
    user: str
    identity: Path

    def ssh_command(self, *remote: str, identity: Path | None = None) -> list[str]:
        """argv for a non-interactive `ssh` to the target running REMOTE."""
        return [
            "ssh", "-F", "none", "-i", str(identity or self.identity), "-p", str(self.port),
            "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "ConnectTimeout=5",
            "-o", "StrictHostKeyChecking=accept-new",
            f"{self.user}@{self.host}", *remote,
        ]


def _state_dir() -> Path:
    return Path(os.environ.get("NEMOTRON_SLURM_STATE", DEFAULT_STATE))


@pytest.fixture(scope="session")
def _cluster_health() -> str:
    """Run `slurm-cluster.sh status` once; skip (or fail under CI=true) when unhealthy."""
    try:
        proc = _run(["bash", str(CLUSTER_SCRIPT), "status"], timeout=90)
        ok, output = proc.returncode == 0, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        ok, output = False, f"status timed out: {exc}"
    if ok:
        return output
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"local Slurm cluster is not healthy under CI=true:\n{output}", pytrace=False)
    pytest.skip("local Slurm cluster/sshd not running: run `scripts/slurm-cluster.sh up` "
                "(as root) to enable these tests")


@pytest.fixture(scope="session")
def slurm_cluster(_cluster_health: str) -> SlurmCluster:
    """The local 2-node cluster: partitions, account `testacct`, nodes, state dir."""
    parts_raw = _run(["sinfo", "-h", "-o", "%P"]).stdout.split()
    partitions = tuple(p.rstrip("*") for p in parts_raw)
    default = next((p.rstrip("*") for p in parts_raw if p.endswith("*")), partitions[0])
    nodes = tuple(sorted(set(_run(["sinfo", "-h", "-N", "-o", "%N"]).stdout.split())))
    config = _run(["scontrol", "show", "config"]).stdout
    match = re.search(r"^ClusterName\s*=\s*(\S+)", config, re.M)
    batch = "batch" if "batch" in partitions else default
    return SlurmCluster(
        cluster_name=match.group(1) if match else "",
        hostname=socket.gethostname().split(".")[0],
        state_dir=_state_dir(),
        account="testacct",
        nodes=nodes,
        partitions=partitions,
        default_partition=default,
        run_partition=default,
        batch_partition=batch,
    )


@pytest.fixture(scope="session")
def ssh_target(_cluster_health: str) -> SSHTarget:
    """sshd at root@127.0.0.1:2222 and the private key that logs in there."""
    return SSHTarget(host="127.0.0.1", port=2222, user="root",
                     identity=_state_dir() / "ssh" / "id_ed25519")


@pytest.fixture(scope="session")
def container_image(slurm_cluster: SlurmCluster) -> str:
    """The squashfs test image pyxis runs (`slurm-cluster.sh up` sets it up through
    scripts/containers.sh); skips with the reason, or fails under CI=true, without one."""
    return container_stack.pyxis_image(_state_dir())
