"""Slurm time limits, and the partition limits a job can be checked against before ``sbatch``.

A job that asks for more nodes than its partition has, or a longer time than
its partition allows, is accepted by ``sbatch`` on many clusters and then waits
in PENDING forever (``PartitionNodeLimit``, ``PartitionTimeLimit``).
:func:`check_partition_limits` asks ``sinfo`` first and refuses such a job with
a one-line error; when ``sinfo`` cannot answer, nothing is checked (Slurm's own
answer, and the monitor's never-starts rule, still apply).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from nemo_runspec.errors import ConfigError

_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")
UNLIMITED = ("infinite", "UNLIMITED", "")


def slurm_seconds(value: str) -> int:
    """Seconds in a Slurm time limit: ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``,
    ``D-HH:MM`` or ``D-HH:MM:SS`` (``sbatch --time``'s formats)."""
    m = _TIME.match(str(value).strip())
    if not m:
        raise ConfigError(f"time {value!r} is not a Slurm time limit",
                          key="run.env.time", hint="write HH:MM:SS or D-HH:MM:SS")
    days, a, b, c = m.groups()
    if days is not None:  # D-HH[:MM[:SS]]
        return int(days) * 86400 + int(a) * 3600 + int(b or 0) * 60 + int(c or 0)
    if c is not None:  # HH:MM:SS
        return int(a) * 3600 + int(b) * 60 + int(c)
    return int(a) * 60 + int(b or 0)  # MM[:SS]


def slurm_time(seconds: int) -> str:
    """``[D-]HH:MM:SS`` (at least a minute; days only when there are any)."""
    days, rest = divmod(max(seconds, 60), 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


@dataclass(frozen=True)
class PartitionLimits:
    """What ``sinfo`` says of a partition: its nodes, its time limit (None: none) and
    the most nodes one job may have (None: no limit beyond the partition's size)."""

    name: str
    nodes: int
    max_time: int | None
    max_job_nodes: int | None


def parse_sinfo(partition: str, output: str) -> PartitionLimits | None:
    """``sinfo -h -p P -o '%D|%l|%s'`` (one line per node state) as limits; None when empty."""
    nodes, max_time, max_job = 0, None, None
    for line in output.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 3 or not parts[0].isdigit():
            continue
        nodes += int(parts[0])
        if parts[1] not in UNLIMITED:
            try:
                max_time = slurm_seconds(parts[1])
            except ConfigError:
                max_time = None
        high = parts[2].rpartition("-")[2]
        if high.isdigit():
            max_job = int(high)
    return PartitionLimits(partition, nodes, max_time, max_job) if nodes else None


def check_partition_limits(run: Callable[[str], tuple[int, str, str]], *, partition: str | None, nodes: int | None,
                           time_limit: str | None, source: str = "the profile") -> None:
    """Refuse a job its partition can never run. ``run(cmd) -> (rc, stdout, stderr)``
    runs a shell command where the job is submitted (:class:`~nemo_runspec.slurm.remote.Remote`).

    Checks ``nodes`` against the partition's size and per-job maximum and
    ``time_limit`` against its time limit. Without a partition (the cluster's
    default), or when ``sinfo`` does not answer, nothing is checked.
    """
    if not partition:
        return
    rc, out, _ = run(f"sinfo -h -p {shlex.quote(partition)} -o '%D|%l|%s'")
    limits = parse_sinfo(partition, out) if rc == 0 else None
    if limits is None:
        return
    want = int(nodes or 1)
    allowed = min(limits.nodes, limits.max_job_nodes or limits.nodes)
    if want > allowed:
        has = (f"has {limits.nodes} node(s)" if allowed == limits.nodes
               else f"allows at most {allowed} node(s) per job")
        raise ConfigError(f"{source} asks for nodes={want} but partition {partition} {has}: "
                          "the job would wait forever", key="run.env.nodes",
                          hint=f"ask for at most {allowed} (run.env.nodes={allowed}) or use another partition "
                               f"(sinfo -p {partition})")
    if time_limit and limits.max_time is not None:
        try:
            asked = slurm_seconds(time_limit)
        except ConfigError:
            return  # sbatch says what is wrong with it
        if asked > limits.max_time:
            raise ConfigError(f"{source} asks for time={time_limit} but partition {partition} allows at most "
                              f"{slurm_time(limits.max_time)}: the job would wait forever", key="run.env.time",
                              hint=f"set run.env.time={slurm_time(limits.max_time)} or less, or use another partition")
