"""What a user is shown after submission: job id, dir, log and the commands to follow or cancel."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from nemo_runspec.slurm.prepared import SubmittedJob

if TYPE_CHECKING:
    from rich.console import Console


def follow_commands(sub: SubmittedJob) -> list[tuple[str, str]]:
    """``(label, command)`` pairs for following and cancelling ``sub``."""
    prefix = ""
    if sub.prepared is not None and sub.prepared.tunnel_kind == "ssh":
        v = sub.prepared.values
        port = f" -p {v['port']}" if v.get("port") else ""
        ident = f" -i {v['identity']}" if v.get("identity") else ""
        prefix = f"ssh{port}{ident} {v.get('user') + '@' if v.get('user') else ''}{v['host']} "
    return [
        ("logs", f"{prefix}tail -f {sub.log_path}"),
        ("queue", f"{prefix}squeue -j {sub.job_id}"),
        ("status", f"{prefix}sacct -j {sub.job_id}"),
        ("cancel", f"{prefix}{_cancel_command(sub)}"),
    ]


def _cancel_command(sub: SubmittedJob) -> str:
    """``scancel``, plus removing the secrets file a never-started job leaves behind."""
    job = sub.prepared
    if job is None or not job.secrets or not job.secret_path:
        return f"scancel {sub.job_id}"
    rm = f"rm -f {shlex.quote(job.secret_path)}"
    if job.tunnel_kind == "ssh":
        return f"'scancel {sub.job_id}; {rm}'"  # one remote command line
    return f"scancel {sub.job_id}; {rm}"


def print_submission(sub: SubmittedJob, console: Console | None = None) -> None:
    """Rich summary: job id, job dir, log path and follow/cancel commands.

    Lines are never wrapped (``soft_wrap``): paths and commands stay copy-pasteable.
    """
    from rich.console import Console
    from rich.markup import escape

    console = console or Console(stderr=True)
    console.print(f"[bold green]Submitted Slurm job {sub.job_id}[/] ({escape(sub.name)})", soft_wrap=True)
    squash = sub.prepared.squash if sub.prepared is not None else None
    if sub.squash_job_id and squash is not None:
        console.print(f"  image:   squashing {squash.image} -> {squash.path} in Slurm job "
                      f"{sub.squash_job_id} (log {squash.log_path}); job {sub.job_id} waits for it",
                      soft_wrap=True, highlight=False, markup=False)
    elif squash is not None:
        console.print(f"  image:   {squash.path} (already squashed)", soft_wrap=True,
                      highlight=False, markup=False)
    console.print(f"  job dir: {sub.job_dir}", soft_wrap=True, highlight=False, markup=False)
    console.print(f"  log:     {sub.log_path}", soft_wrap=True, highlight=False, markup=False)
    for label, cmd in follow_commands(sub):
        console.print(f"  {label + ':':8} [cyan]{escape(cmd)}[/]", soft_wrap=True, highlight=False)


def submission_record(sub: SubmittedJob) -> dict[str, str]:
    """What a script needs to follow or cancel ``sub``: the one JSON line ``--batch``
    prints on stdout (the human summary goes to stderr)."""
    return {
        "job_id": str(sub.job_id), "name": sub.name, "job_dir": sub.job_dir, "log": sub.log_path,
        "follow": f"nemotron jobs logs -f {sub.job_id}", "status": f"nemotron jobs status {sub.job_id}",
        "cancel": f"nemotron jobs cancel {sub.job_id}",
    }
