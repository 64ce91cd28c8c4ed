"""What Slurm last said about each job, kept here for when Slurm cannot be asked.

When the controller (``slurmctld``) or accounting (``slurmdbd``) is down, a job's
state cannot be learnt; ``nemotron jobs`` and ``--run`` then show what Slurm
said the last time it was asked, and when. Every state Slurm does answer is
remembered in ``$NEMOTRON_HOME/jobs/last-seen.json``: ``{"<cluster>:<job id>":
{"state", "reason", "nodes", "exit_code", "seen"}}`` (``<cluster>`` is ``local``
or the SSH host). The file is a cache: written whole (temporary file, then
rename), a lost update between two concurrent commands only loses a sighting,
and one that cannot be read or written is ignored.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nemo_runspec.slurm.remote import Remote

#: entries kept (the most recently seen)
KEEP = 2000
#: what this process wrote last for each key: a follower polling every few seconds rewrites
#: the file only when something changed
_WRITTEN: dict[str, tuple[Any, ...]] = {}


def cluster_name(remote: Remote) -> str:
    """``local``, or the SSH host of a :class:`~nemo_runspec.slurm.remote.Remote`: what a job is keyed by."""
    return "local" if remote.local else str(remote.values.get("host") or "ssh")


def path() -> Path:
    """``$NEMOTRON_HOME/jobs/last-seen.json``."""
    from nemo_runspec.paths import jobs_dir

    return jobs_dir() / "last-seen.json"


def _load() -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remember(cluster: str, states: Iterable[Mapping[str, Any]]) -> None:
    """Record each ``{"job_id", "state", "reason", "nodes", "exit_code"}`` as seen now."""
    seen = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
    new = {f"{cluster}:{s['job_id']}": {"state": s.get("state", ""), "reason": s.get("reason", ""),
                                       "nodes": s.get("nodes", ""), "exit_code": s.get("exit_code"), "seen": seen}
           for s in states if s.get("state")}
    new = {k: v for k, v in new.items() if _WRITTEN.get(k) != _same(v)}
    if not new:
        return
    _WRITTEN.update({k: _same(v) for k, v in new.items()})
    data = _load()
    data.update(new)
    if len(data) > KEEP:
        data = dict(sorted(data.items(), key=lambda kv: str(kv[1].get("seen", "")))[-KEEP:])
    target = path()
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data))
        os.replace(tmp, target)
    except OSError:
        tmp.unlink(missing_ok=True)


def _same(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    return entry.get("state"), entry.get("reason"), entry.get("nodes"), entry.get("exit_code")


def recall(cluster: str, job_id: str) -> dict[str, Any] | None:
    """The last sighting of ``job_id`` on ``cluster``, or None."""
    return _load().get(f"{cluster}:{job_id}")


def describe(entry: Mapping[str, Any] | None) -> str:
    """``RUNNING on n1 (seen 2025-06-01 10:00:00)``, or ``never seen`` for None."""
    if not entry:
        return "never seen"
    state = str(entry.get("state", "?"))
    if entry.get("exit_code") not in (None, ""):
        state += f" (exit {entry['exit_code']})"
    if entry.get("nodes"):
        state += f" on {entry['nodes']}"
    elif entry.get("reason"):
        state += f" ({entry['reason']})"
    return f"{state} (seen {entry.get('seen', '?')})"
