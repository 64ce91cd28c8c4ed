"""The attempts of a resilient job, as its batch script recorded them (``resilience/attempts.jsonl``).

``templates/resilience.sh`` appends a ``start`` line when an attempt begins and an
``end`` line (``kind``, ``reason``, ``exit_code``, ``node``, ``requeue``, ``exclude``)
when it ends; an attempt Slurm ended without the script (a node failure) is
closed by the next one. ``nemotron jobs`` reads these files, all of one
cluster's jobs in one command (:func:`load`).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nemo_runspec.slurm.remote import Remote

RECORD = os.path.join("resilience", "attempts.jsonl")
_MARK = "@@nemotron-attempts "


@dataclass
class Attempt:
    """One attempt of a job: where it ran, and how it ended (``kind`` empty while it runs)."""

    number: int
    nodes: str = ""
    exclude: str = ""
    kind: str = ""
    reason: str = ""
    requeue: bool = False
    node: str = ""


def parse(text: str) -> list[Attempt]:
    """The attempts in the text of an ``attempts.jsonl`` (unreadable lines skipped)."""
    found: dict[int, Attempt] = {}
    for line in text.splitlines():
        try:
            rec = json.loads(line)
            number = int(rec["attempt"])
        except (ValueError, KeyError, TypeError):
            continue
        att = found.setdefault(number, Attempt(number))
        if rec.get("event") == "start":
            att.nodes, att.exclude = str(rec.get("nodes") or ""), str(rec.get("exclude") or "")
        elif rec.get("event") == "end":
            att.kind, att.reason = str(rec.get("kind") or ""), str(rec.get("reason") or "")
            att.requeue, att.node = bool(rec.get("requeue")), str(rec.get("node") or "")
    return [found[k] for k in sorted(found)]


def load(remote: Remote, job_dirs: Iterable[str]) -> dict[str, list[Attempt]]:
    """``job dir -> attempts`` for the job dirs that have a record (one command over SSH)."""
    dirs = [d for d in dict.fromkeys(job_dirs) if d]
    if not dirs:
        return {}
    if remote.local:
        out: dict[str, list[Attempt]] = {}
        for d in dirs:
            try:
                with open(os.path.join(d, RECORD), encoding="utf-8") as f:
                    out[d] = parse(f.read())
            except OSError:
                continue
        return out
    script = "; ".join(f"echo {shlex.quote(_MARK + d)}; cat {shlex.quote(os.path.join(d, RECORD))} 2>/dev/null"
                       for d in dirs)
    rc, text, _ = remote.run(script)
    out, current, chunk = {}, None, []
    for line in [*text.splitlines(), _MARK]:
        if line.startswith(_MARK):
            if current is not None and chunk:
                out[current] = parse("\n".join(chunk))
            current, chunk = line[len(_MARK):], []
        else:
            chunk.append(line)
    return out


def brief(attempts: list[Attempt]) -> str:
    """``3: timelimit, stall n2`` (attempt count, then how each ended attempt ended); ``-`` without."""
    if not attempts:
        return "-"
    ends = [a.kind + (f" {a.node}" if a.node else "") for a in attempts if a.kind and a.kind != "completed"]
    return f"{len(attempts)}" + (f": {', '.join(ends)}" if ends else "")


def lines(attempts: list[Attempt]) -> list[str]:
    """One readable line per attempt."""
    out = []
    for a in attempts:
        where = a.nodes or "?"
        excluded = f", excluding {a.exclude}" if a.exclude else ""
        end = a.reason or "running (or ended without a record)"
        then = " -> requeued" if a.requeue else ""
        out.append(f"attempt {a.number} on {where}{excluded}: {end}{then}")
    return out
